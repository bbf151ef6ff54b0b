"""cc_grpc_proto_library: protobuf + gRPC C++ code from the system protoc.

Uses Debian's protoc and grpc_cpp_plugin (symlinked by @system_libs) so the
generated code matches the installed libprotobuf and libgrpc++ exactly.
"""

def cc_grpc_proto_library(name, srcs, deps = [], grpc = True, **kwargs):
    """Generates <file>.pb.{h,cc} (and .grpc.pb.{h,cc}) for each .proto in srcs.

    Imports are written from the workspace root: import "proto/v1/common.proto".
    """
    pkg = native.package_name()
    outs_h, outs_cc = [], []
    for src in srcs:
        base = src[:-len(".proto")]
        outs_h.append(base + ".pb.h")
        outs_cc.append(base + ".pb.cc")
        if grpc:
            outs_h.append(base + ".grpc.pb.h")
            outs_cc.append(base + ".grpc.pb.cc")
    proto_deps = [d + "_protos" for d in deps]
    native.filegroup(name = name + "_protos", srcs = srcs + proto_deps)
    args = [
        "$(location @system_libs//:bin/protoc)",
        "-I.",
        "-I/usr/include",
        "--cpp_out=$(GENDIR)",
    ]
    tools = ["@system_libs//:bin/protoc"]
    if grpc:
        args += [
            "--grpc_out=$(GENDIR)",
            "--plugin=protoc-gen-grpc=$(location @system_libs//:bin/grpc_cpp_plugin)",
        ]
        tools.append("@system_libs//:bin/grpc_cpp_plugin")
    native.genrule(
        name = name + "_gen",
        srcs = srcs + proto_deps,
        outs = outs_h + outs_cc,
        tools = tools,
        cmd = " ".join(args + ["%s/%s" % (pkg, s) for s in srcs]),
        message = "protoc %s" % ", ".join(srcs),
    )
    native.cc_library(
        name = name,
        srcs = outs_cc,
        hdrs = outs_h,
        deps = deps + ["@system_libs//:protobuf"] + (["@system_libs//:grpc"] if grpc else []),
        copts = ["-Wno-unused-parameter"],
        **kwargs
    )
