// Package yamlnode reads the nodes of github.com/goccy/go-yaml's AST the
// way sluice's strict YAML parsers (dsl for job files, jobtest for test
// files) both need: the text of a scalar, and a description of a node's
// kind for "must be X, found Y" errors.
package yamlnode

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Scalar returns the text of a scalar node (a string, a literal block, a
// number, a boolean, .inf or .nan) as written, "" for an empty literal
// block, and false for any other node.
func Scalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

// Kind describes a node for "want X, found Y" errors: "nothing (null)",
// "a mapping", "a list", "a string", "a number", "a boolean", or "a " and
// the node type in lower case.
func Kind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "nothing (null)"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	}
	return "a " + strings.ToLower(fmt.Sprint(n.Type()))
}
