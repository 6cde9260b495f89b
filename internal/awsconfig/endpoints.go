package awsconfig

import (
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// SetEndpoints points cfg at general for every service (its BaseEndpoint,
// what AWS_ENDPOINT_URL says) and at each service's own endpoint in
// services, keyed by the suffix of the service's variable
// (AWS_ENDPOINT_URL_DYNAMODB: "DYNAMODB"). An empty value sets nothing.
//
// The services' endpoints go into cfg.ServiceOptions, which every client
// built from cfg applies last (and package secrets' client too), so they
// hold whatever the process environment or a profile says. The SDK's
// config.WithBaseEndpoint cannot serve here: it answers every service's
// question for its own endpoint with the general one, so with it
// AWS_ENDPOINT_URL_<SERVICE> is never read.
func SetEndpoints(cfg *aws.Config, general string, services map[string]string) {
	if general != "" {
		cfg.BaseEndpoint = aws.String(general)
	}
	own := map[string]string{}
	for k, v := range services {
		if v != "" {
			own[strings.ToUpper(k)] = v
		}
	}
	if len(own) == 0 {
		return
	}
	cfg.ServiceOptions = append(cfg.ServiceOptions, func(serviceID string, options any) {
		if v, ok := own[strings.ToUpper(strings.ReplaceAll(serviceID, " ", "_"))]; ok {
			setBaseEndpoint(options, v)
		}
	})
}

// setBaseEndpoint sets the BaseEndpoint field of a client's options. Every
// service client's Options struct has one, but they share no interface:
// reflection spares this package a type switch importing every service
// (and it serves only tools people run, never a function).
func setBaseEndpoint(options any, url string) {
	v := reflect.ValueOf(options)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	f := v.Elem().FieldByName("BaseEndpoint")
	if f.IsValid() && f.CanSet() && f.Type() == reflect.TypeOf((*string)(nil)) {
		f.Set(reflect.ValueOf(aws.String(url)))
	}
}
