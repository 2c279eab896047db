#pragma once

namespace dq4::cli::bench {

// dq4 bench serve [options]: streamed requests against a running OpenAI-compatible server at
// each concurrency of a sweep (or at request rates), TTFT / TPOT / ITL / throughput per level.
int run_serve_bench_cli(int argc, char** argv, int first);

}  // namespace dq4::cli::bench
