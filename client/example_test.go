package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/google/uuid"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
)

// Submit an echo job to the system at $NATS_URL (or `ward dev`) as the
// tenant of $WARD_CREDS, follow it to its end and print its result.
func Example() {
	c, err := client.Dial(client.NATSURL(""), client.Options{Creds: os.Getenv("WARD_CREDS")})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	req := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", Payload: []byte(`{"hello":"world"}`)}
	w, err := c.Watch(req.JobId) // before Submit, so that no event is missed
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	if _, err := c.Submit(ctx, req); errors.Is(err, client.ErrRefused) {
		log.Fatalf("refused: %v", err) // rate_limited, queue_full, ...
	} else if err != nil {
		log.Fatal(err)
	}
	last, err := c.Wait(ctx, req.JobId, w, func(ev *wardv1.JobEvent) { fmt.Println(ev.GetState(), ev.GetReason()) })
	if err != nil {
		log.Fatal(err)
	}
	if last.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		log.Fatalf("job ended %s: %s", last.GetState(), last.GetReason())
	}
	job, err := c.Get(ctx, req.JobId, true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s ran on %s: %s\n", job.GetJobId(), job.GetWorkerId(), job.GetResult())
}
