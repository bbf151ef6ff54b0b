// cuBLASLt's memory layout of block-scale tensors (std-only, so that it is
// unit-tested on machines without a GPU).
//
// For CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 (MXFP8: one UE8M0 scale per 32
// elements along the reduction axis K) an operand with `outer` rows (M for A,
// N for B) has a logical scale matrix of outer x inner_blocks (inner_blocks =
// ceil(K / 32)). cuBLAS ("1D block scaling factors layout" in the cuBLAS
// documentation) stores it padded to a multiple of 128 rows and 4 blocks, cut
// into 128 x 4 tiles of 512 bytes; tiles follow each other row-major (all
// the tiles of rows 0..127 first, then rows 128..255, ...), and inside a tile
// row r, block c sits at byte (r % 32) * 16 + (r / 32) * 4 + c (the 128 rows
// are interleaved as 4 groups of 32 so that one 16-byte load serves a row of
// every group).
#pragma once

#include <cstdint>
#include <vector>

namespace moetune::kernels {

inline constexpr int64_t kScaleTileRows = 128;
inline constexpr int64_t kScaleTileBlocks = 4;
inline constexpr int64_t kScaleTileBytes = kScaleTileRows * kScaleTileBlocks;  // 512

// Bytes of the padded tensor: roundup(outer, 128) * roundup(inner_blocks, 4).
int64_t BlockScaleTensorBytes(int64_t outer, int64_t inner_blocks);

// Byte offset of the scale of (row, block) in that tensor.
int64_t BlockScaleOffset(int64_t row, int64_t block, int64_t inner_blocks);

// The tiled tensor of the sub-matrix rows [0, rows) x blocks [block_begin,
// block_begin + blocks) of a row-major scale matrix (`ld` scales per row;
// pass scales + first_row * ld for a row range). Padding bytes are `pad`
// (UE8M0 127 = 2^0 is a harmless choice: padded rows and blocks scale
// elements that do not exist).
std::vector<uint8_t> TileBlockScales(const uint8_t* scales, int64_t ld, int64_t rows,
                                     int64_t block_begin, int64_t blocks, uint8_t pad);

}  // namespace moetune::kernels
