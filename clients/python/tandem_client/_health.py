"""The two messages of grpc.health.v1 (https://github.com/grpc/grpc/blob/master/doc/health-checking.md).

They are built from a descriptor in a private pool rather than generated: a process that also imports
grpcio-health-checking registers grpc/health/v1/health.proto in the default pool, and a second
definition there would clash.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

CHECK_METHOD = "/grpc.health.v1.Health/Check"


def _build():
    f = descriptor_pb2.FileDescriptorProto(
        name="tandem_client/health.proto", package="grpc.health.v1", syntax="proto3"
    )
    req = f.message_type.add(name="HealthCheckRequest")
    req.field.add(
        name="service",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    resp = f.message_type.add(name="HealthCheckResponse")
    status = resp.enum_type.add(name="ServingStatus")
    for number, name in enumerate(("UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN")):
        status.value.add(name=name, number=number)
    resp.field.add(
        name="status",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_ENUM,
        type_name=".grpc.health.v1.HealthCheckResponse.ServingStatus",
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    # protobuf >= 4.22 has GetMessageClass; older versions only MessageFactory.GetPrototype.
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:
        get_class = message_factory.MessageFactory(pool).GetPrototype
    return (
        get_class(pool.FindMessageTypeByName("grpc.health.v1.HealthCheckRequest")),
        get_class(pool.FindMessageTypeByName("grpc.health.v1.HealthCheckResponse")),
    )


HealthCheckRequest, HealthCheckResponse = _build()


def status_name(response) -> str:
    """"SERVING", "NOT_SERVING", ... of a HealthCheckResponse."""
    return response.DESCRIPTOR.fields_by_name["status"].enum_type.values_by_number[
        response.status
    ].name
