package snowdrift_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"snowdrift.dev/snowdrift"
)

// The README's Go example, run against a real server (TestMain starts it and sets
// SNOWDRIFT_URL and SNOWDRIFT_TOKEN); TestReadmeHasTheExample checks that README.md's Go
// block is this function's body between the markers.
func Example() {
	// README-BEGIN
	client, err := snowdrift.New(snowdrift.Config{
		Endpoints: []string{os.Getenv("SNOWDRIFT_URL")}, // e.g. http://10.0.0.1:8080
		Token:     os.Getenv("SNOWDRIFT_TOKEN"),         // when the servers have auth on
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	id, err := client.Next(ctx, "order")                 // 64-bit kinds, from the cache
	ids, _ := client.NextN(ctx, "order", 500)            // many at once
	text, _ := client.NextText(ctx, "u7")                // text kinds (UUID, ULID, ...)
	site, _ := client.NextNamed(ctx, "u5", "python.org") // uuid3/uuid5: the name to hash
	// README-END
	fmt.Println(err == nil && id > 0, len(ids), len(text), site)
	// Output: true 500 36 886313e1-3b8a-5372-9b90-0c9aee199e5d
}
