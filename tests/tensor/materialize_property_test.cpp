// Property test: any chain of views, materialised, equals a naive element-by-element gather
// computed independently from the view's own index arithmetic.
#include <memhal/tensor.hpp>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

// The reference: for each logical index, where does the element come from in the base tensor?
// Tracked as an affine map in *element* units, independent of memhal's byte strides.
struct IndexMap {
  std::vector<int64_t> shape;
  std::vector<int64_t> coeff;  // base element offset per step along each axis
  int64_t origin = 0;
};

std::vector<uint8_t> gather(const std::vector<uint8_t>& base, const IndexMap& map, std::size_t element) {
  std::vector<uint8_t> out;
  int64_t count = 1;
  for (auto d : map.shape) count *= d;
  if (count == 0) return out;
  std::vector<int64_t> index(map.shape.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t at = map.origin;
    for (std::size_t i = 0; i < index.size(); ++i) at += index[i] * map.coeff[i];
    for (std::size_t b = 0; b < element; ++b) out.push_back(base[static_cast<std::size_t>(at) * element + b]);
    for (std::size_t i = index.size(); i-- > 0;) {
      if (++index[i] < map.shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

TEST(MaterializeProperty, EveryViewChainEqualsANaiveGather) {
  std::mt19937 rng(20261202);
  const DType dtypes[] = {DType::U8, DType::U16, DType::F32, DType::F64};
  int checked = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const DType dtype = dtypes[rng() % 4];
    const std::size_t element = size_of(dtype);
    const std::size_t rank = 1 + rng() % 5;
    std::vector<int64_t> shape(rank);
    for (auto& d : shape) d = rng() % 6;  // zero-sized dimensions included
    ASSERT_OK_AND_ASSIGN(Tensor base, Tensor::create(shape, dtype, MemoryKind::Mem));
    std::vector<uint8_t> bytes(static_cast<std::size_t>(base.nbytes()));
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    {
      ASSERT_OK_AND_ASSIGN(TensorMap map, base.map(CpuAccess::Write));
      std::copy(bytes.begin(), bytes.end(), reinterpret_cast<uint8_t*>(map.data()));
    }
    IndexMap ref{shape, std::vector<int64_t>(rank), 0};
    for (int64_t c = 1, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
      ref.coeff[i] = c;
      c *= shape[i];
    }
    Tensor view = base;
    const int steps = 1 + rng() % 4;
    for (int s = 0; s < steps; ++s) {
      const std::size_t r = ref.shape.size();
      switch (rng() % 4) {
        case 0: {  // slice
          const std::size_t axis = rng() % r;
          const int64_t n = ref.shape[axis];
          const int64_t begin = n ? rng() % (n + 1) : 0;
          const int64_t end = begin + (n - begin ? rng() % (n - begin + 1) : 0);
          ASSERT_OK_AND_ASSIGN(view, view.slice(axis, begin, end));
          ref.origin += begin * ref.coeff[axis];
          ref.shape[axis] = end - begin;
          break;
        }
        case 1: {  // flip
          const std::size_t axis = rng() % r;
          ASSERT_OK_AND_ASSIGN(view, view.flip(axis));
          if (ref.shape[axis] > 0) ref.origin += (ref.shape[axis] - 1) * ref.coeff[axis];
          ref.coeff[axis] = -ref.coeff[axis];
          break;
        }
        case 2: {  // transpose
          const std::size_t a = rng() % r, b = rng() % r;
          ASSERT_OK_AND_ASSIGN(view, view.transpose(a, b));
          std::swap(ref.shape[a], ref.shape[b]);
          std::swap(ref.coeff[a], ref.coeff[b]);
          break;
        }
        case 3: {  // permute
          std::vector<std::size_t> axes(r);
          std::iota(axes.begin(), axes.end(), std::size_t{0});
          std::shuffle(axes.begin(), axes.end(), rng);
          ASSERT_OK_AND_ASSIGN(view, view.permute(axes));
          IndexMap next = ref;
          for (std::size_t i = 0; i < r; ++i) {
            next.shape[i] = ref.shape[axes[i]];
            next.coeff[i] = ref.coeff[axes[i]];
          }
          ref = next;
          break;
        }
      }
      EXPECT_TRUE(same_storage(base, view));
    }
    // Reshape to flat works only when the strides allow it; when it does, it must agree too.
    ASSERT_OK_AND_ASSIGN(Tensor dense, view.materialize());
    ASSERT_TRUE(dense.is_contiguous());
    ASSERT_EQ(std::vector<int64_t>(dense.shape().begin(), dense.shape().end()), ref.shape);
    ASSERT_OK_AND_ASSIGN(TensorMap map, dense.map(CpuAccess::Read));
    ASSERT_OK_AND_ASSIGN(auto got, map.span<const std::byte>());
    const auto expected = gather(bytes, ref, element);
    ASSERT_EQ(got.size(), expected.size()) << "trial " << trial;
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), reinterpret_cast<const uint8_t*>(got.data())))
        << "trial " << trial;
    auto flat = view.reshape({-1});
    if (flat.has_value()) {
      ASSERT_OK_AND_ASSIGN(Tensor flat_dense, flat->materialize());
      ASSERT_OK_AND_ASSIGN(TensorMap flat_map, flat_dense.map(CpuAccess::Read));
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), reinterpret_cast<const uint8_t*>(flat_map.data())))
          << "reshape of trial " << trial;
    } else if (!expected.empty()) {
      EXPECT_EQ(flat.error().code(), ErrorCode::InvalidArgument);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3000);
}

}  // namespace
}  // namespace memhal
