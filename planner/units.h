// Units used by the planner, defined once. Every quantity that crosses a
// function boundary is a double in SI base units (bytes, seconds, FLOPs,
// bytes per second, FLOPs per second) with the unit in its name; these
// constants convert from the units that datasheets and papers use.
#pragma once

namespace moetune::planner::units {

// Bytes (decimal, as in datasheets: "80 GB", "3.35 TB/s").
inline constexpr double kKB = 1e3;
inline constexpr double kMB = 1e6;
inline constexpr double kGB = 1e9;
inline constexpr double kTB = 1e12;

// Bytes (binary, as in memory reports: "80 GiB").
inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Network line rates are quoted in bits per second: 400 Gbit/s = 50 GB/s.
inline constexpr double kGbitPerSecInBytesPerSec = 1e9 / 8.0;

// Floating-point operations.
inline constexpr double kGFLOP = 1e9;
inline constexpr double kTFLOP = 1e12;
inline constexpr double kPFLOP = 1e15;

// Time.
inline constexpr double kSecond = 1.0;
inline constexpr double kMillisecond = 1e-3;
inline constexpr double kMicrosecond = 1e-6;
inline constexpr double kNanosecond = 1e-9;

// FLOPs per multiply-accumulate.
inline constexpr double kFlopsPerMac = 2.0;

}  // namespace moetune::planner::units
