DROP TABLE signing_keys;
