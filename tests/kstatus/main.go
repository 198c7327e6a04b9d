// kstatus reads Kumo objects from a cluster and prints what kstatus — the status
// library Flux, kpt and Argo CD's health checks build on (sigs.k8s.io/cli-utils) —
// computes for each, one JSON object per line:
//
//	kstatus --kubeconfig FILE --namespace NS RESOURCE/NAME...
//	{"object":"virtualmachinegroups/web","status":"InProgress","message":"..."}
//
// tests/integration/test_kstatus.py runs it against the lab. It is a test program:
// Kumo itself stays Python.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type line struct {
	Object  string `json:"object"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	namespace := flag.String("namespace", "default", "namespace of the objects")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		fail(err)
	}
	out := json.NewEncoder(os.Stdout)
	for _, arg := range flag.Args() {
		resource, name, ok := strings.Cut(arg, "/")
		if !ok {
			fail(fmt.Errorf("want RESOURCE/NAME, got %q", arg))
		}
		gvr := schema.GroupVersionResource{Group: "kumo.dev", Version: "v1alpha1", Resource: resource}
		obj, err := client.Resource(gvr).Namespace(*namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			fail(err)
		}
		result, err := status.Compute(obj)
		if err != nil {
			fail(err)
		}
		if err := out.Encode(line{arg, result.Status.String(), result.Message}); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kstatus:", err)
	os.Exit(1)
}
