module snowdrift.test/xid-check

go 1.22

require github.com/rs/xid v1.6.0
