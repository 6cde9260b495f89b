// Command hello is the cold-start benchmark's baseline: the smallest
// aws-lambda-go function, built exactly as the real ones are.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, map[string]any) (map[string]string, error) {
		return map[string]string{"hello": "world"}, nil
	})
}
