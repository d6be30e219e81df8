// Command chat-simple is the simple chat worker: it answers "Echo: " and
// the message.
package main

import "github.com/ward-run/ward/modules/sdk"

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		in, err := j.Input()
		if err != nil {
			return err
		}
		req, err := sdk.ParseChatRequest(in)
		if err != nil {
			return err
		}
		return j.WriteJSON(sdk.ChatResponse{Reply: "Echo: " + req.Message})
	})
}

func main() { sdk.Main() }
