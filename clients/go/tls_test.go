package snowdrift

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testTransport trusts dir/ca.pem when there is one (the TLS test's own CA).
func testTransport(dir string) http.RoundTripper {
	pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return http.DefaultTransport
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
}

// writeCA makes a private CA and a certificate for 127.0.0.1 signed by it, in dir.
func writeCA(t *testing.T, dir string) []byte {
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, leafKey := key(), key()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "snowdrift go test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKeyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", caPEM)
	write("cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}))
	write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: leafKeyDER}))
	return caPEM
}

// A server under a private CA is reached with CACert, and refused without it (the
// certificate is checked, not skipped).
func TestTLSWithCustomCA(t *testing.T) {
	dir := t.TempDir()
	caPEM := writeCA(t, dir)
	s := startServer(t, dir, false, "tls_cert = \""+dir+"/cert.pem\"\ntls_key = \""+dir+"/key.pem\"\n")
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("server URL %s", s.URL)
	}
	c := newTestClient(t, Config{Endpoints: []string{s.URL}, CACert: caPEM})
	id, err := c.Next(ctxT(t), "order")
	if err != nil || id == 0 {
		t.Fatalf("over TLS with the CA: %d, %v", id, err)
	}
	bare := newTestClient(t, Config{Endpoints: []string{s.URL}, Attempts: 1})
	_, err = bare.Next(ctxT(t), "order")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: want an unavailable error about the certificate, got %v", err)
	}
}
