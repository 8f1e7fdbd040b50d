module snowdrift.dev/snowdrift

go 1.19
