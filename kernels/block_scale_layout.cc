#include "kernels/block_scale_layout.h"

#include <cstddef>

namespace moetune::kernels {
namespace {

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace

int64_t BlockScaleTensorBytes(int64_t outer, int64_t inner_blocks) {
  return RoundUp(outer, kScaleTileRows) * RoundUp(inner_blocks, kScaleTileBlocks);
}

int64_t BlockScaleOffset(int64_t row, int64_t block, int64_t inner_blocks) {
  const int64_t tiles_per_row = RoundUp(inner_blocks, kScaleTileBlocks) / kScaleTileBlocks;
  const int64_t tile = (row / kScaleTileRows) * tiles_per_row + block / kScaleTileBlocks;
  const int64_t r = row % kScaleTileRows, c = block % kScaleTileBlocks;
  return tile * kScaleTileBytes + (r % 32) * 16 + (r / 32) * 4 + c;
}

std::vector<uint8_t> TileBlockScales(const uint8_t* scales, int64_t ld, int64_t rows,
                                     int64_t block_begin, int64_t blocks, uint8_t pad) {
  std::vector<uint8_t> out(static_cast<size_t>(BlockScaleTensorBytes(rows, blocks)), pad);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      out[BlockScaleOffset(r, b, blocks)] = scales[r * ld + block_begin + b];
    }
  }
  return out;
}

}  // namespace moetune::kernels
