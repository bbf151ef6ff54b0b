#!/usr/bin/python3
"""A Python gRPC client of the planner API (stubs generated from proto/ with
protoc and grpc_python_plugin), asking the server's Predict the same question
as `moetune predict` on the command line: both answers must be identical
(planner/request.h: predict is the search with the given knobs pinned).

Usage: predict_client.py MOETUNE_SERVER MOETUNE_CLI PROTO_ROOT WORKDIR
Prints one line per check and 'N passed, M failed'; exit 1 on any failure.
"""
import json
import os
import subprocess
import sys
import time


def main():
    server_bin, cli_bin, proto_root, work = sys.argv[1:5]
    gen = os.path.join(work, "gen")
    os.makedirs(gen, exist_ok=True)
    subprocess.run(["protoc", "-I", proto_root, "--python_out", gen, "--grpc_python_out", gen,
                    "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                    "proto/common.proto", "proto/planner_service.proto"], check=True)
    sys.path.insert(0, gen)
    import grpc
    from proto import planner_service_pb2 as pb
    from proto import planner_service_pb2_grpc as pb_grpc

    port_file = os.path.join(work, "port")
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen([server_bin, "--listen=127.0.0.1:0",
                               "--db=" + os.path.join(work, "moetune.db"),
                               "--port_file=" + port_file, "--search_threads=2"],
                              stdout=log, stderr=subprocess.STDOUT)
    results = []
    try:
        deadline = time.monotonic() + 30
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            if time.monotonic() > deadline or server.poll() is not None:
                print("FAIL server did not start (see %s)" % log.name)
                return 1
            time.sleep(0.05)
        address = "127.0.0.1:" + open(port_file).read().strip()
        stub = pb_grpc.PlannerServiceStub(grpc.insecure_channel(address))

        req = pb.PredictRequest()
        req.model.preset = "qwen3-30b-a3b"
        req.cluster.preset = "h100-sxm"
        req.shape.gpus, req.shape.seq_len, req.shape.global_batch_size = 16, 4096, 256
        req.shape.objective = "finetune"
        req.parallel.expert_parallel = 8
        req.constraints.fix = "pp=2,recompute=none,overlap=dp+ep+pp"
        req.constraints.moe_load_imbalance = 1.2
        req.software_stack = "26.04.01"
        rpc = json.loads(stub.Predict(req, timeout=60).prediction.planner_json)

        cli = subprocess.run([cli_bin, "predict", "--model", "qwen3-30b-a3b", "--cluster",
                              "h100-sxm", "--gpus", "16", "--seq", "4096", "--gbs", "256",
                              "--objective", "finetune", "--ep", "8", "--pp", "2",
                              "--recompute", "none", "--overlap", "dp,ep,pp",
                              "--moe-imbalance", "1.2", "--stack", "26.04.01",
                              "--format", "json"], capture_output=True, text=True)
        if cli.returncode != 0:
            print("FAIL cli predict exit %d: %s" % (cli.returncode, cli.stderr.strip()))
            return 1
        local = json.loads(cli.stdout)
        for what, a, b in [
                ("layout", rpc["config"]["parallel"], local["config"]["parallel"]),
                ("knobs", rpc["config"]["knobs"], local["config"]["knobs"]),
                ("tokens/s/GPU", rpc["tokens_per_sec_per_gpu"], local["tokens_per_sec_per_gpu"]),
                ("peak memory", rpc["peak_memory_bytes"], local["peak_memory_bytes"]),
                ("breakdown", rpc["breakdown"], local["breakdown"])]:
            results.append((what, a == b, "%s vs %s" % (a, b)))
        results.append(("pins held", rpc["config"]["parallel"]["pp"] == 2 and
                        rpc["config"]["knobs"]["recompute"] == "none", str(rpc["config"])))

        # Refused pins: INVALID_ARGUMENT naming the Megatron-Core rule.
        req.constraints.fix = "pp=2,vp=2,overlap=false"
        try:
            stub.Predict(req, timeout=60)
            results.append(("refusal", False, "Predict accepted pins Megatron refuses"))
        except grpc.RpcError as e:
            ok = (e.code() == grpc.StatusCode.INVALID_ARGUMENT and
                  "Megatron-Core: the interleaved schedule" in e.details())
            results.append(("refusal", ok, "%s %s" % (e.code(), e.details())))
    finally:
        server.terminate()
        server.wait(timeout=30)
    failed = 0
    for what, ok, detail in results:
        print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else ": " + detail))
        failed += not ok
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
