package otsfake

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// message is a message of the SDK's generated otsprotocol package: APIv1
// structs (github.com/golang/protobuf era, no ProtoReflect). They go
// through google.golang.org/protobuf by protoadapt.MessageV2Of, which reads
// the same struct tags the SDK marshals with, so the wire format is the
// SDK's own (the fake's tests run the real SDK client against it).
type message = protoadapt.MessageV1

// marshal encodes m in the protobuf wire format.
func marshal(m message) ([]byte, error) { return proto.Marshal(protoadapt.MessageV2Of(m)) }

// unmarshalInto decodes b into m.
func unmarshalInto(b []byte, m message) error { return proto.Unmarshal(b, protoadapt.MessageV2Of(m)) }
