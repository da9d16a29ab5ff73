package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The connection's security settings from the environment (see scenario.ts): an unset
// SECURITY_PROTOCOL means PLAINTEXT; SASL_SSL adds SCRAM-SHA-512 with SASL_USERNAME and
// SASL_PASSWORD over TLS trusting the CA in SSL_CA_LOCATION, as a user configures kgo.
var securityProtocol = os.Getenv("SECURITY_PROTOCOL")

// connection is the seed brokers and security options every client of the scenario starts from.
func connection(extra ...kgo.Opt) []kgo.Opt {
	return append(connectionWith(os.Getenv("SASL_PASSWORD")), extra...)
}

func connectionWith(password string) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(bootstrap)}
	if securityProtocol == "" {
		return opts
	}
	if securityProtocol != "SASL_SSL" || os.Getenv("SASL_MECHANISM") != "SCRAM-SHA-512" {
		panic("only SASL_SSL with SCRAM-SHA-512 is wired up, not " + securityProtocol)
	}
	pem, err := os.ReadFile(os.Getenv("SSL_CA_LOCATION"))
	if err != nil {
		panic(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		panic("no certificate in SSL_CA_LOCATION")
	}
	auth := scram.Auth{User: os.Getenv("SASL_USERNAME"), Pass: password}
	return append(opts,
		kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}),
		kgo.SASL(auth.AsSha512Mechanism()))
}

// wrongPassword: a client with a wrong password must fail with SASL_AUTHENTICATION_FAILED.
func wrongPassword() (string, error) {
	client, err := kgo.NewClient(connectionWith("not-" + os.Getenv("SASL_PASSWORD"))...)
	if err != nil {
		return "", err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = client.Ping(ctx)
	if err == nil {
		return "", errors.New("a client with a wrong password reached the broker")
	}
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		return "", fmt.Errorf("failed with %w, not SASL_AUTHENTICATION_FAILED", err)
	}
	return err.Error(), nil
}
