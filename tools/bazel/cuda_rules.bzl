"""cuda_library: .cu sources compiled by nvcc, or a fallback when CUDA is absent."""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")

# Hopper (sm_90) and Blackwell (sm_100) cubins, plus compute_100 PTX for newer GPUs.
NVCC_ARCH_FLAGS = [
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_100,code=sm_100",
    "-gencode=arch=compute_100,code=compute_100",
]

def cuda_library(name, srcs, hdrs = [], cu_hdrs = [], deps = [], fallback_srcs = [],
                 fallback_deps = [], copts = [], **kwargs):
    """A cc_library built from CUDA sources when the toolkit is present.

    Args:
      name: target name.
      srcs: .cu and .cc sources of the CUDA implementation.
      hdrs: public headers (shared by both implementations).
      cu_hdrs: private headers the .cu files include.
      deps: cc deps of the CUDA implementation (std-only code; @local_cuda is added).
      fallback_srcs: sources used instead when no CUDA toolkit is found; they must
        implement the same interface and report Unimplemented.
      fallback_deps: deps of the fallback implementation.
      copts: extra host compiler options for .cc sources.
    """
    if not CUDA_AVAILABLE:
        native.cc_library(
            name = name,
            srcs = fallback_srcs,
            hdrs = hdrs,
            deps = fallback_deps,
            copts = copts,
            **kwargs
        )
        return

    objs = []
    cc_srcs = []
    for src in srcs:
        if not src.endswith(".cu"):
            cc_srcs.append(src)
            continue
        obj = "_objs_%s/%s.o" % (name, src[:-3])
        native.genrule(
            name = "%s_nvcc_%s" % (name, src.replace("/", "_").replace(".", "_")),
            srcs = [src] + hdrs + cu_hdrs,
            outs = [obj],
            cmd = " ".join([
                NVCC,
                "-c $(location %s)" % src,
                "-o $@",
                "-std=c++17",
                "-O3",
                "-ccbin /usr/bin/gcc",
                "-Xcompiler -fPIC,-Wall,-Wextra",
                "-I.",
                "-I$(GENDIR)",
            ] + NVCC_ARCH_FLAGS),
            message = "nvcc %s" % src,
        )
        objs.append(obj)
    native.cc_library(
        name = name,
        srcs = cc_srcs + objs,
        hdrs = hdrs + cu_hdrs,
        deps = deps + ["@local_cuda//:cuda"],
        copts = copts,
        **kwargs
    )
