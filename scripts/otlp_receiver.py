#!/usr/bin/env python3
"""A real OTLP/HTTP trace receiver for airlock's telemetry tests (issue 20).

It decodes what an exporter sends to POST /v1/traces with the official protobuf
definitions (the `opentelemetry-proto` package from PyPI, installed by
scripts/services.sh) and prints one JSON line per span on stdout, so a test can read
exactly what went over the wire. Its first line is `listening <port>`.

  python3 scripts/otlp_receiver.py [--port 0] [--count]

With --count it prints one line per request (`<spans> spans`) instead of every span: the
benchmark's mode, where the receiver shares the machine with the server under load and
should spend as little CPU as it can.

Answers as the OTLP specification says: 200 with an ExportTraceServiceResponse for a
well-formed protobuf request, 400 for a body that does not decode, 415 for another
media type, 404 elsewhere.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(any_value, kind)
    if kind == "array_value":
        return [value_of(v) for v in value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.values}
    if kind == "bytes_value":
        return value.hex()
    return value


def attributes(pairs):
    return {kv.key: value_of(kv.value) for kv in pairs}


def spans_of(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": span.kind,
                    "start_unix_nano": span.start_time_unix_nano,
                    "end_unix_nano": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes),
                    "events": [
                        {
                            "name": event.name,
                            "time_unix_nano": event.time_unix_nano,
                            "attributes": attributes(event.attributes),
                        }
                        for event in span.events
                    ],
                    "links": [
                        {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()}
                        for link in span.links
                    ],
                }


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        media = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if media != "application/x-protobuf":
            self.send_error(415)
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError:
            self.send_error(400)
            return
        if self.server.count_only:
            spans = sum(
                len(scope.spans)
                for resource in request.resource_spans
                for scope in resource.scope_spans
            )
            print(f"{spans} spans", flush=True)
        else:
            for span in spans_of(request):
                print(json.dumps(span, sort_keys=True), flush=True)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--count", action="store_true", help="print span counts only")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Receiver)
    server.count_only = args.count
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
