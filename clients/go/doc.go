// Package snowdrift is a client for snowdrift ID servers that caches ID ranges in the
// application, so most calls never leave the process and the servers can be away for a
// while without the application noticing. It speaks HTTP/1.1 (GET /v1/ids/{name} with
// form=runs) and needs nothing outside the standard library.
//
//	client, err := snowdrift.New(snowdrift.Config{
//		Endpoints: []string{"http://10.0.0.1:8080", "http://10.0.0.2:8080"},
//		Token:     os.Getenv("SNOWDRIFT_TOKEN"),
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer client.Close()
//	id, err := client.Next(ctx, "order")
//
// Each name has a batch being served and the next one, fetched in the background once
// Config.PrefetchAt of the current one is used; the batch size follows the rate of use
// (about Config.Hold worth, within Config.BatchMin and Config.BatchMax). A warm Next is one
// atomic add on the current run: no lock, no allocation. Cached snowflake IDs older than
// Config.MaxAge are dropped, never handed out; tso names are never cached.
//
// Fetches go round-robin to the endpoints whose /readyz answers 200 and that have not failed
// lately, each request cut at Config.Deadline and retried on the next endpoint; an endpoint
// that fails twice in a row waits out an exponential backoff with jitter. Errors the servers
// say are final (ErrUnknownName, ErrUnauthorized, ErrForbidden, ErrBadRequest, ErrWrongKind)
// come back at once. While no server answers, callers are served from the cache; once it is
// empty they get ErrUnavailable naming the name, every endpoint and its last error, and the
// client recovers by itself when a server is back. Client.Endpoints tells how each endpoint
// stands.
//
// Servers are not trusted to be right: an answer that is not well-formed JSON of the asked
// name, names a kind that is not a 64-bit kind (or not the kind the name had), holds a count
// or stride below 1, a run that reaches 2^63 (no snowdrift kind issues such an ID), more IDs
// than asked, or IDs this client already received for the name (runs, or one of the newest
// 65,536 text IDs) is refused and its endpoint counted as failed; it never becomes IDs.
//
// Guarantees: an ID is handed out once; IDs cached when the client closes are skipped, never
// reused. Order: one goroutine's IDs of a fetched run increase (not with
// Config.PerProcessor); a later run may go back when it comes from another server.
package snowdrift
