"""A fake OpenTelemetry collector: OTLP/HTTP logs on 127.0.0.1, as strict as the spec.

Built to the OTLP specification's OTLP/HTTP section (opentelemetry-proto
``docs/specification.md``, "OTLP/HTTP"): a request is a ``POST`` to ``/v1/logs`` whose body is
an ``ExportLogsServiceRequest``, binary protobuf (``Content-Type: application/x-protobuf``)
or JSON (``application/json``), optionally ``Content-Encoding: gzip``. Success is ``200`` with
an ``ExportLogsServiceResponse`` in the request's encoding and the same ``Content-Type``.
Anything else is refused as a collector refuses it: another path ``404``, another method
``405``, another content type ``415``, a body that does not decode ``400`` with a
``google.rpc.Status`` message. ``hold`` makes every export wait until released (a collector
that does not answer).
"""

from __future__ import annotations

import gzip
import json
import threading
from typing import Any

from google.protobuf import json_format
from google.rpc import status_pb2
from loopback import Loopback, QuietHandler
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class FakeCollector(Loopback):
    def __init__(self) -> None:
        self.requests: list[logs_service_pb2.ExportLogsServiceRequest] = []
        self.refused: list[tuple[int, str]] = []
        self.hold = threading.Event()
        self.hold.set()  # set: answer at once
        self.received = threading.Event()
        collector = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                self._refuse(405, "only POST")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                collector.received.set()
                if self.path != "/v1/logs":
                    return self._refuse(404, f"no such path {self.path}")
                kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                if kind not in (PROTOBUF, JSON):
                    return self._refuse(415, f"unsupported content type {kind!r}")
                gzipped = (self.headers.get("Content-Encoding") or "").lower() == "gzip"
                message = logs_service_pb2.ExportLogsServiceRequest()
                try:
                    if gzipped:
                        body = gzip.decompress(body)
                    if kind == PROTOBUF:
                        message.ParseFromString(body)
                    else:
                        json_format.Parse(body.decode(), message)
                except Exception as exc:
                    return self._refuse(400, f"cannot decode: {exc}", kind)
                collector.hold.wait(60)
                collector.requests.append(message)
                answer = logs_service_pb2.ExportLogsServiceResponse()
                data = (answer.SerializeToString() if kind == PROTOBUF
                        else json_format.MessageToJson(answer).encode())  # fmt: skip
                self.answer(200, data, kind)

            def _refuse(self, code: int, why: str, kind: str = PROTOBUF) -> None:
                collector.refused.append((code, why))
                status = status_pb2.Status(code=3, message=why)
                data = (status.SerializeToString() if kind == PROTOBUF
                        else json_format.MessageToJson(status).encode())  # fmt: skip
                self.answer(code, data, kind)

        self.serve(Handler)

    @property
    def endpoint(self) -> str:
        return self.url

    def close(self) -> None:
        self.hold.set()  # a held export answers: the server's threads end
        super().close()

    def records(self) -> list[dict[str, Any]]:
        """Every log record received, as ``{"event_name", "body", "attributes", "service"}``."""
        found = []
        for request in list(self.requests):
            for resource_logs in request.resource_logs:
                resource = {a.key: _value(a.value) for a in resource_logs.resource.attributes}
                for scope_logs in resource_logs.scope_logs:
                    for item in scope_logs.log_records:
                        found.append({
                            "event_name": item.event_name,
                            "body": _value(item.body),
                            "severity": item.severity_number,
                            "time": item.time_unix_nano,
                            "attributes": {a.key: _value(a.value) for a in item.attributes},
                            "service": resource.get("service.name"),
                        })  # fmt: skip
        return found


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    found = getattr(value, kind)
    return found if kind != "array_value" else json.dumps(str(found))
