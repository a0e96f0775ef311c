#include <memhal/system_view.hpp>

#include <cstring>
#include <functional>
#include <random>

#include "test_support.hpp"

namespace memhal {
namespace {

using Index = std::vector<int64_t>;

// The obvious, slow model of a view: a dense array of element values and its shape.
struct Reference {
  std::vector<uint32_t> values;
  Index shape;
};

int64_t count(const Index& shape) {
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;
  return n;
}

Index unravel(int64_t linear, const Index& shape) {
  Index index(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    index[i] = linear % shape[i];
    linear /= shape[i];
  }
  return index;
}

int64_t ravel(const Index& index, const Index& shape) {
  int64_t linear = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) linear = linear * shape[i] + index[i];
  return linear;
}

// out[index] = in[source(index)] for every index of `shape`.
Reference remap(const Reference& in, Index shape, const std::function<Index(Index)>& source) {
  Reference out{std::vector<uint32_t>(static_cast<std::size_t>(count(shape))), shape};
  for (int64_t i = 0; i < count(shape); ++i) {
    out.values[static_cast<std::size_t>(i)] =
        in.values[static_cast<std::size_t>(ravel(source(unravel(i, shape)), in.shape))];
  }
  return out;
}

// Reads the view element by element through its strides.
std::vector<uint32_t> read(const SystemView& view) {
  const TensorView& v = view.view();
  const Index shape(v.shape().begin(), v.shape().end());
  std::vector<uint32_t> out(static_cast<std::size_t>(count(shape)));
  for (int64_t i = 0; i < count(shape); ++i) {
    const Index index = unravel(i, shape);
    const std::byte* at = view.element0();
    for (std::size_t d = 0; d < index.size(); ++d) at += index[d] * v.strides()[d];
    std::memcpy(&out[static_cast<std::size_t>(i)], at, sizeof(uint32_t));
  }
  return out;
}

struct Fixture {
  SystemView view;
  Reference reference;
};

Fixture make_fixture(const Index& shape) {
  Reference reference{std::vector<uint32_t>(static_cast<std::size_t>(count(shape))), shape};
  for (std::size_t i = 0; i < reference.values.size(); ++i)
    reference.values[i] = static_cast<uint32_t>(i * 2654435761u);
  std::vector<std::byte> bytes(reference.values.size() * sizeof(uint32_t));
  std::memcpy(bytes.data(), reference.values.data(), bytes.size());
  auto view = TensorView::contiguous(shape, DType::U32);
  EXPECT_TRUE(view.has_value());
  auto system_view = SystemView::create(SharedBytes::adopt(std::move(bytes)), *view);
  EXPECT_TRUE(system_view.has_value());
  return {*system_view, reference};
}

// One random transform applied to both the view and the reference.
void random_step(std::mt19937& rng, Fixture& f) {
  Index shape = f.reference.shape;
  const std::size_t rank = shape.size();
  auto pick = [&rng](int64_t below) { return std::uniform_int_distribution<int64_t>(0, below - 1)(rng); };
  const int op = static_cast<int>(pick(rank >= 2 ? 6 : 3));
  const Reference& in = f.reference;
  if (op == 0) {
    const auto axis = static_cast<std::size_t>(pick(static_cast<int64_t>(rank)));
    ASSERT_OK_AND_ASSIGN(f.view, f.view.flip(axis));
    f.reference = remap(in, shape, [&](Index i) {
      i[axis] = shape[axis] - 1 - i[axis];
      return i;
    });
  } else if (op == 1) {
    Index begins(rank), sizes(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      begins[d] = pick(shape[d]);
      sizes[d] = 1 + pick(shape[d] - begins[d]);
    }
    ASSERT_OK_AND_ASSIGN(f.view, f.view.crop(begins, sizes));
    f.reference = remap(in, sizes, [&](Index i) {
      for (std::size_t d = 0; d < rank; ++d) i[d] += begins[d];
      return i;
    });
  } else if (op == 2 || op == 3) {
    const auto a = static_cast<std::size_t>(pick(static_cast<int64_t>(rank)));
    const auto b = static_cast<std::size_t>(pick(static_cast<int64_t>(rank)));
    ASSERT_OK_AND_ASSIGN(f.view, f.view.transpose(a, b));
    Index out_shape = shape;
    std::swap(out_shape[a], out_shape[b]);
    f.reference = remap(in, out_shape, [&](Index i) {
      std::swap(i[a], i[b]);
      return i;
    });
  } else {
    const int64_t h = shape[0], w = shape[1];
    const int quarter = static_cast<int>(pick(3)) + 1;
    Index out_shape = shape;
    if (quarter != 2) std::swap(out_shape[0], out_shape[1]);
    ASSERT_OK_AND_ASSIGN(f.view, quarter == 1   ? f.view.rotate90()
                                 : quarter == 2 ? f.view.rotate180()
                                                : f.view.rotate270());
    f.reference = remap(in, out_shape, [&](Index i) {
      const int64_t r = i[0], c = i[1];
      if (quarter == 1) i[0] = h - 1 - c, i[1] = r;          // clockwise 90
      if (quarter == 2) i[0] = h - 1 - r, i[1] = w - 1 - c;  // 180
      if (quarter == 3) i[0] = c, i[1] = w - 1 - r;          // clockwise 270
      return i;
    });
  }
}

TEST(SystemView, RandomTransformChainsMatchANaiveReference) {
  std::mt19937 rng(20261202);
  for (int trial = 0; trial < 300; ++trial) {
    const auto rank = static_cast<std::size_t>(std::uniform_int_distribution<int>(1, 6)(rng));
    Index shape(rank);
    for (auto& d : shape) d = std::uniform_int_distribution<int64_t>(1, rank > 4 ? 3 : 6)(rng);
    Fixture f = make_fixture(shape);
    const std::byte* base = f.view.bytes().data();
    const int steps = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int s = 0; s < steps; ++s) {
      random_step(rng, f);
      if (HasFatalFailure()) return;
      ASSERT_EQ(f.view.bytes().data(), base) << "a transform copied bytes";
      const Index view_shape(f.view.view().shape().begin(), f.view.view().shape().end());
      ASSERT_EQ(view_shape, f.reference.shape) << "trial " << trial << " step " << s;
      ASSERT_EQ(read(f.view), f.reference.values) << "trial " << trial << " step " << s;
    }
    ASSERT_OK_AND_ASSIGN(const SystemView dense, f.view.materialize());
    EXPECT_TRUE(dense.is_contiguous());
    ASSERT_EQ(dense.bytes().size(), f.reference.values.size() * sizeof(uint32_t));
    EXPECT_EQ(std::memcmp(dense.bytes().data(), f.reference.values.data(), dense.bytes().size()), 0)
        << "trial " << trial;
  }
}

TEST(SystemView, RotationsOfA2x3ImageMatchTheirPictures) {
  // 1 2 3
  // 4 5 6
  std::vector<std::byte> pixels;
  for (int v = 1; v <= 6; ++v) pixels.push_back(static_cast<std::byte>(v));
  ASSERT_OK_AND_ASSIGN(const TensorView view, TensorView::contiguous({2, 3}, DType::U8));
  ASSERT_OK_AND_ASSIGN(const SystemView image, SystemView::create(SharedBytes::adopt(pixels), view));
  auto dense_bytes = [](const SystemView& v) {
    auto dense = v.materialize();
    std::vector<int> out;
    for (const std::byte b : dense->bytes().span()) out.push_back(static_cast<int>(b));
    return out;
  };
  ASSERT_OK_AND_ASSIGN(const SystemView cw90, image.rotate90());
  EXPECT_EQ(dense_bytes(cw90), (std::vector<int>{4, 1, 5, 2, 6, 3}));  // 3x2: 4 1 / 5 2 / 6 3
  ASSERT_OK_AND_ASSIGN(const SystemView cw180, image.rotate180());
  EXPECT_EQ(dense_bytes(cw180), (std::vector<int>{6, 5, 4, 3, 2, 1}));
  ASSERT_OK_AND_ASSIGN(const SystemView cw270, image.rotate270());
  EXPECT_EQ(dense_bytes(cw270), (std::vector<int>{3, 6, 2, 5, 1, 4}));  // 3x2: 3 6 / 2 5 / 1 4
}

TEST(SystemView, IsContiguousOnlyForDenseRowMajorViews) {
  ASSERT_OK_AND_ASSIGN(const TensorView view, TensorView::contiguous({4, 5, 3}, DType::U8));
  ASSERT_OK_AND_ASSIGN(const SharedBytes bytes, SharedBytes::allocate(60));
  ASSERT_OK_AND_ASSIGN(const SystemView image, SystemView::create(bytes, view));
  EXPECT_TRUE(image.is_contiguous());
  EXPECT_FALSE(image.flip(0)->is_contiguous());
  EXPECT_FALSE(image.transpose(0, 1)->is_contiguous());
  EXPECT_FALSE(image.crop({0, 1, 0}, {4, 3, 3})->is_contiguous());
  EXPECT_TRUE(image.crop({1, 0, 0}, {2, 5, 3})->is_contiguous()) << "whole rows stay dense";
}

TEST(SystemView, PackedBytesOfAContiguousViewAreItsOwnBytes) {
  ASSERT_OK_AND_ASSIGN(const TensorView view, TensorView::contiguous({4, 5}, DType::U16));
  ASSERT_OK_AND_ASSIGN(const SharedBytes bytes, SharedBytes::allocate(40));
  ASSERT_OK_AND_ASSIGN(const SystemView image, SystemView::create(bytes, view));
  ASSERT_OK_AND_ASSIGN(const SystemView rows, image.crop({1, 0}, {2, 5}));
  ASSERT_OK_AND_ASSIGN(const SharedBytes packed, rows.packed_bytes());
  EXPECT_EQ(packed.data(), bytes.data() + 10);
  EXPECT_EQ(packed.size(), 20u);
  ASSERT_OK_AND_ASSIGN(const SharedBytes gathered, image.flip(1)->packed_bytes());
  EXPECT_FALSE(same_block(gathered, bytes));
}

TEST(SystemView, RejectsViewsOutsideTheirBytesAndBadArguments) {
  ASSERT_OK_AND_ASSIGN(const SharedBytes bytes, SharedBytes::allocate(59));
  ASSERT_OK_AND_ASSIGN(const TensorView view, TensorView::contiguous({4, 5, 3}, DType::U8));
  EXPECT_ERROR(ErrorCode::OutOfRange, SystemView::create(bytes, view));
  ASSERT_OK_AND_ASSIGN(const SharedBytes enough, SharedBytes::allocate(60));
  ASSERT_OK_AND_ASSIGN(const SystemView image, SystemView::create(enough, view));
  EXPECT_ERROR(ErrorCode::OutOfRange, image.flip(3));
  EXPECT_ERROR(ErrorCode::OutOfRange, image.transpose(0, 3));
  EXPECT_ERROR(ErrorCode::OutOfRange, image.crop({0, 0, 0}, {5, 1, 1}));
  EXPECT_ERROR(ErrorCode::OutOfRange, image.crop({-1, 0, 0}, {1, 1, 1}));
  EXPECT_ERROR(ErrorCode::InvalidArgument, image.crop({0, 0}, {1, 1}));
  ASSERT_OK_AND_ASSIGN(const TensorView line, TensorView::contiguous({8}, DType::U8));
  ASSERT_OK_AND_ASSIGN(const SystemView row, SystemView::create(enough, line));
  EXPECT_ERROR(ErrorCode::InvalidArgument, row.rotate90());
}

TEST(TensorView, RejectsRanksAboveSixAndNegativeReach) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, TensorView::contiguous({1, 1, 1, 1, 1, 1, 1}, DType::U8));
  EXPECT_OK(TensorView::contiguous({1, 1, 1, 1, 1, 1}, DType::U8));
  const int64_t shape[] = {2, 2};
  const int64_t strides[] = {-2, 1};
  EXPECT_ERROR(ErrorCode::InvalidArgument, TensorView::strided(shape, strides, 0, DType::U8));
  ASSERT_OK_AND_ASSIGN(const TensorView flipped, TensorView::strided(shape, strides, 2, DType::U8));
  EXPECT_EQ(flipped.byte_extent().begin, 0);
  EXPECT_EQ(flipped.byte_extent().end, 4);
  const int64_t huge[] = {INT64_MAX / 2, 4};
  EXPECT_ERROR(ErrorCode::InvalidArgument, TensorView::contiguous(huge, DType::U32));
}

}  // namespace
}  // namespace memhal
