// argocd-health evaluates an Argo CD Lua health script the way Argo CD does — on
// github.com/yuin/gopher-lua, the interpreter Argo CD embeds, with the object as the
// global `obj` — on JSON bodies, and prints one JSON line per body:
//
//	argocd-health SCRIPT.lua BODY.json...
//	{"body":"BODY.json","status":"Healthy","message":"Ready"}
//
// tests/unit/test_argocd_health.py runs it on the bodies captured from the lab
// (tests/argocd/bodies). It is a test program: Kumo itself stays Python.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	lua "github.com/yuin/gopher-lua"
)

// The health codes Argo CD accepts from a script (gitops-engine's health.HealthStatusCode).
var codes = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true,
	"Suspended": true, "Missing": true, "Unknown": true,
}

type line struct {
	Body    string `json:"body"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	if len(os.Args) < 3 {
		fail(fmt.Errorf("usage: argocd-health SCRIPT.lua BODY.json..."))
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	out := json.NewEncoder(os.Stdout)
	for _, path := range os.Args[2:] {
		raw, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		var obj map[string]interface{}
		if err := json.Unmarshal(raw, &obj); err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		status, message, err := evaluate(string(script), obj)
		if err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		if err := out.Encode(line{path, status, message}); err != nil {
			fail(err)
		}
	}
}

// evaluate runs the script in a fresh state with the libraries Argo CD opens for health
// scripts (no io, no os) and returns the table's status and message.
func evaluate(script string, obj map[string]interface{}) (string, string, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", decode(L, obj))
	if err := L.DoString(script); err != nil {
		return "", "", err
	}
	table, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the script returned %s, not a table", L.Get(-1).Type())
	}
	status := lua.LVAsString(table.RawGetString("status"))
	if !codes[status] {
		return "", "", fmt.Errorf("not a health status: %q", status)
	}
	return status, lua.LVAsString(table.RawGetString("message")), nil
}

// decode turns a JSON value into Lua values as Argo CD's decodeValue does: objects and
// arrays become tables (arrays 1-based), numbers LNumber, null nil.
func decode(L *lua.LState, value interface{}) lua.LValue {
	switch v := value.(type) {
	case map[string]interface{}:
		table := L.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetString(key, decode(L, item))
		}
		return table
	case []interface{}:
		table := L.CreateTable(len(v), 0)
		for i, item := range v {
			table.RawSetInt(i+1, decode(L, item))
		}
		return table
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	case nil:
		return lua.LNil
	}
	panic(fmt.Sprintf("unexpected JSON value %T", value))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "argocd-health:", err)
	os.Exit(1)
}
