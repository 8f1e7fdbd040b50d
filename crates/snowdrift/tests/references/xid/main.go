// xid-check: rs/xid itself, for snowdrift's tests to check its xids against.
//
//	xid-check parse   < IDs          one line per ID: "ID SECS MACHINE PID COUNTER", or "ID invalid"
//	xid-check encode  < HEX          one line per 24 hex digits: the xid rs/xid writes for those bytes
//	xid-check host                   "MACHINE OSPID XIDPID": this process's machine ID and PID as rs/xid makes them
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/rs/xid"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: xid-check parse|encode|host")
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch os.Args[1] {
	case "host":
		id := xid.New()
		fmt.Fprintf(out, "%s %d %d\n", hex.EncodeToString(id.Machine()), os.Getpid(), id.Pid())
		return
	case "parse", "encode":
	default:
		fmt.Fprintln(os.Stderr, "usage: xid-check parse|encode|host")
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := in.Text()
		if os.Args[1] == "encode" {
			b, err := hex.DecodeString(line)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			id, err := xid.FromBytes(b)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintln(out, id.String())
			continue
		}
		id, err := xid.FromString(line)
		if err != nil {
			fmt.Fprintf(out, "%s invalid\n", line)
			continue
		}
		fmt.Fprintf(out, "%s %d %s %d %d\n", line, id.Time().Unix(), hex.EncodeToString(id.Machine()), id.Pid(), id.Counter())
	}
}
