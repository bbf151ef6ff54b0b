"""Detects the CUDA toolkit and exposes it as @local_cuda.

The toolkit is looked up at $MOETUNE_CUDA_PATH (default /usr/local/cuda). When it
is present (bin/nvcc and include/cuda_runtime.h), @local_cuda//:defs.bzl says
CUDA_AVAILABLE = True and @local_cuda//:cuda links cudart, cuBLAS, cuBLASLt and
NCCL. When it is absent, CUDA_AVAILABLE = False and //tools/bazel:cuda_rules.bzl
builds the fallback sources instead, so every target still builds with no flag.

To build as a machine without CUDA would:
  bazel build --repo_env=MOETUNE_CUDA_PATH=/nonexistent //...
"""

def _local_cuda_impl(ctx):
    path = ctx.os.environ.get("MOETUNE_CUDA_PATH", "") or "/usr/local/cuda"
    root = ctx.path(path)
    available = (root.exists and ctx.path(path + "/bin/nvcc").exists and
                 ctx.path(path + "/include/cuda_runtime.h").exists)
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    if not available:
        ctx.file("defs.bzl", "\n".join([
            "# Generated: no CUDA toolkit at %s." % path,
            "CUDA_AVAILABLE = False",
            'CUDA_PATH = ""',
            'NVCC = ""',
            "",
        ]))
        ctx.file("BUILD", "\n".join([
            'package(default_visibility = ["//visibility:public"])',
            'exports_files(["defs.bzl"])',
            "# No CUDA toolkit: an empty library so that dependents still resolve.",
            'cc_library(name = "cuda")',
            "",
        ]))
        return

    # Symlink the headers (without the 1.7k-file cccl tree) into the repository.
    ctx.symlink(path + "/include", "include")
    ctx.file("defs.bzl", "\n".join([
        "# Generated: CUDA toolkit found at %s." % path,
        "CUDA_AVAILABLE = True",
        'CUDA_PATH = "%s"' % path,
        'NVCC = "%s/bin/nvcc"' % path,
        "",
    ]))
    lib = path + "/lib64"
    ctx.file("BUILD", "\n".join([
        'package(default_visibility = ["//visibility:public"])',
        'exports_files(["defs.bzl"])',
        "cc_library(",
        '    name = "cuda",',
        '    hdrs = glob(["include/*.h", "include/crt/*.h", "include/crt/*.hpp"]),',
        '    includes = ["include"],',
        "    linkopts = [",
        '        "-L%s",' % lib,
        '        "-Wl,-rpath,%s",' % lib,
        '        "-lcudart",',
        '        "-lcublasLt",',
        '        "-lcublas",',
        '        "-lnccl",',
        "    ],",
        ")",
        "",
    ]))

local_cuda = repository_rule(
    implementation = _local_cuda_impl,
    environ = ["MOETUNE_CUDA_PATH"],
    local = True,
)
