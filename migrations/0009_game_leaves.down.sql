DROP TABLE game_leaves;
