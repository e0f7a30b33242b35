module github.com/commitreveal/rps

go 1.26
