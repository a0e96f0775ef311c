// Errors, vocabulary lookups and availability for C.
#include <array>
#include <mutex>

#include "c_api/c_api.hpp"

namespace memhal::c_api {
namespace {
thread_local std::string t_last_error;
}

const char* last_error() {
  return t_last_error.c_str();
}

int fail(ErrorCode code, std::string message) {
  t_last_error = std::move(message);
  return static_cast<int>(code);
}

std::optional<MemoryKind> memory_choice(int32_t memory, bool& ok) {
  ok = true;
  if (memory == MEMHAL_MEMORY_KIND_AUTO) return std::nullopt;
  auto kind = memory >= 0 ? from_code<MemoryKind>(static_cast<uint32_t>(memory)) : std::nullopt;
  if (!kind) {
    ok = false;
    fail(ErrorCode::InvalidArgument, "memory kind code " + std::to_string(memory) + " is unknown");
  }
  return kind;
}

int give_tensor(Result<Tensor> result, memhal_tensor_t** out) {
  if (!result) return fail(result.error());
  *out = new memhal_tensor{std::move(*result)};
  return MEMHAL_OK;
}

}  // namespace memhal::c_api

using namespace memhal;
using memhal::c_api::fail;
using memhal::c_api::guarded;

// The C constants are the C++ codes: pinned here, and checked against the golden file by a test.
static_assert(MEMHAL_OK == 0);
static_assert(MEMHAL_ERROR_INVALID_ARGUMENT == static_cast<int>(ErrorCode::InvalidArgument));
static_assert(MEMHAL_ERROR_NOT_IMPLEMENTED == static_cast<int>(ErrorCode::NotImplemented));
static_assert(MEMHAL_ERROR_UNAVAILABLE == static_cast<int>(ErrorCode::Unavailable));
static_assert(MEMHAL_ERROR_OUT_OF_MEMORY == static_cast<int>(ErrorCode::OutOfMemory));
static_assert(MEMHAL_ERROR_IO == static_cast<int>(ErrorCode::Io));
static_assert(MEMHAL_ERROR_PERMISSION_DENIED == static_cast<int>(ErrorCode::PermissionDenied));
static_assert(MEMHAL_ERROR_OUT_OF_RANGE == static_cast<int>(ErrorCode::OutOfRange));
static_assert(MEMHAL_ERROR_UNSUPPORTED_DOMAIN == static_cast<int>(ErrorCode::UnsupportedDomain));
static_assert(MEMHAL_ERROR_NOT_HOST_ADDRESSABLE == static_cast<int>(ErrorCode::NotHostAddressable));
static_assert(MEMHAL_ERROR_BUSY == static_cast<int>(ErrorCode::Busy));
static_assert(MEMHAL_ERROR_CORRUPT == static_cast<int>(ErrorCode::Corrupt));
static_assert(MEMHAL_ERROR_PROTOCOL == static_cast<int>(ErrorCode::Protocol));
static_assert(MEMHAL_ERROR_INTERNAL == static_cast<int>(ErrorCode::Internal));
static_assert(all<ErrorCode>().size() == 13, "a new ErrorCode needs its MEMHAL_ERROR_ constant");

static_assert(MEMHAL_MEMORY_KIND_MEM == code(MemoryKind::Mem));
static_assert(MEMHAL_MEMORY_KIND_SHM == code(MemoryKind::Shm));
static_assert(MEMHAL_MEMORY_KIND_DMABUF == code(MemoryKind::DmaBuf));
static_assert(MEMHAL_MEMORY_KIND_IOSURFACE == code(MemoryKind::IoSurface));
static_assert(MEMHAL_MEMORY_KIND_PBO == code(MemoryKind::Pbo));
static_assert(MEMHAL_MEMORY_KIND_CUDA == code(MemoryKind::Cuda));
static_assert(all<MemoryKind>().size() == 6, "a new MemoryKind needs its MEMHAL_MEMORY_KIND_ constant");

static_assert(MEMHAL_DTYPE_U8 == code(DType::U8));
static_assert(MEMHAL_DTYPE_I8 == code(DType::I8));
static_assert(MEMHAL_DTYPE_U16 == code(DType::U16));
static_assert(MEMHAL_DTYPE_I16 == code(DType::I16));
static_assert(MEMHAL_DTYPE_U32 == code(DType::U32));
static_assert(MEMHAL_DTYPE_I32 == code(DType::I32));
static_assert(MEMHAL_DTYPE_U64 == code(DType::U64));
static_assert(MEMHAL_DTYPE_I64 == code(DType::I64));
static_assert(MEMHAL_DTYPE_F16 == code(DType::F16));
static_assert(MEMHAL_DTYPE_F32 == code(DType::F32));
static_assert(MEMHAL_DTYPE_F64 == code(DType::F64));
static_assert(MEMHAL_DTYPE_BF16 == code(DType::BF16));
static_assert(all<DType>().size() == 12, "a new DType needs its MEMHAL_DTYPE_ constant");

static_assert(MEMHAL_PIXEL_FORMAT_RGB == code(PixelFormat::Rgb));
static_assert(MEMHAL_PIXEL_FORMAT_RGBA == code(PixelFormat::Rgba));
static_assert(MEMHAL_PIXEL_FORMAT_BGRA == code(PixelFormat::Bgra));
static_assert(MEMHAL_PIXEL_FORMAT_GREY == code(PixelFormat::Grey));
static_assert(MEMHAL_PIXEL_FORMAT_YUYV == code(PixelFormat::Yuyv));
static_assert(MEMHAL_PIXEL_FORMAT_VYUY == code(PixelFormat::Vyuy));
static_assert(MEMHAL_PIXEL_FORMAT_NV12 == code(PixelFormat::Nv12));
static_assert(MEMHAL_PIXEL_FORMAT_NV16 == code(PixelFormat::Nv16));
static_assert(MEMHAL_PIXEL_FORMAT_PLANAR_RGB == code(PixelFormat::PlanarRgb));
static_assert(MEMHAL_PIXEL_FORMAT_PLANAR_RGBA == code(PixelFormat::PlanarRgba));
static_assert(MEMHAL_PIXEL_FORMAT_NV24 == code(PixelFormat::Nv24));
static_assert(MEMHAL_PIXEL_FORMAT_NV21 == code(PixelFormat::Nv21));
static_assert(MEMHAL_PIXEL_FORMAT_I420 == code(PixelFormat::I420));
static_assert(MEMHAL_PIXEL_FORMAT_UYVY == code(PixelFormat::Uyvy));
static_assert(MEMHAL_PIXEL_FORMAT_BGR == code(PixelFormat::Bgr));
static_assert(all<PixelFormat>().size() == 15, "a new PixelFormat needs its MEMHAL_PIXEL_FORMAT_ constant");

static_assert(MEMHAL_COMPRESSION_NONE == code(Compression::None));
static_assert(MEMHAL_COMPRESSION_ANY == code(Compression::Any));
static_assert(MEMHAL_COMPRESSION_UBWC == code(Compression::Ubwc));
static_assert(MEMHAL_COMPRESSION_AFBC == code(Compression::Afbc));
static_assert(MEMHAL_COMPRESSION_PVRIC == code(Compression::Pvric));
static_assert(MEMHAL_COMPRESSION_DCC == code(Compression::Dcc));
static_assert(all<Compression>().size() == 6, "a new Compression needs its MEMHAL_COMPRESSION_ constant");

static_assert(MEMHAL_CPU_ACCESS_NONE == code(CpuAccess::None));
static_assert(MEMHAL_CPU_ACCESS_READ == code(CpuAccess::Read));
static_assert(MEMHAL_CPU_ACCESS_WRITE == code(CpuAccess::Write));
static_assert(MEMHAL_CPU_ACCESS_READ_WRITE == code(CpuAccess::ReadWrite));
static_assert(all<CpuAccess>().size() == 4, "a new CpuAccess needs its MEMHAL_CPU_ACCESS_ constant");

static_assert(MEMHAL_MEMORY_DOMAIN_KIND_SYSTEM == code(MemoryDomainKind::System));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_SYSTEM_VIEW == code(MemoryDomainKind::SystemView));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_DMABUF == code(MemoryDomainKind::DmaBuf));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_VULKAN_TEXTURE == code(MemoryDomainKind::VulkanTexture));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_WEBGPU_BUFFER == code(MemoryDomainKind::WebGPUBuffer));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_CUDA == code(MemoryDomainKind::Cuda));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_D3D11_TEXTURE == code(MemoryDomainKind::D3D11Texture));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_CV_PIXEL_BUFFER == code(MemoryDomainKind::CvPixelBuffer));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_WEBGPU_EXTERNAL_TEXTURE == code(MemoryDomainKind::WebGPUExternalTexture));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_WGPU_TEXTURE == code(MemoryDomainKind::WgpuTexture));
static_assert(MEMHAL_MEMORY_DOMAIN_KIND_WGPU_BUFFER == code(MemoryDomainKind::WgpuBuffer));
static_assert(all<MemoryDomainKind>().size() == 11, "a new MemoryDomainKind needs its constant");

static_assert(MEMHAL_FLIP_NONE == code(Flip::None));
static_assert(MEMHAL_FLIP_HORIZONTAL == code(Flip::Horizontal));
static_assert(MEMHAL_FLIP_VERTICAL == code(Flip::Vertical));
static_assert(MEMHAL_FLIP_BOTH == code(Flip::Both));
static_assert(all<Flip>().size() == 4, "a new Flip needs its MEMHAL_FLIP_ constant");

static_assert(MEMHAL_ROTATION_NONE == code(Rotation::None));
static_assert(MEMHAL_ROTATION_CW90 == code(Rotation::Cw90));
static_assert(MEMHAL_ROTATION_CW180 == code(Rotation::Cw180));
static_assert(MEMHAL_ROTATION_CW270 == code(Rotation::Cw270));
static_assert(all<Rotation>().size() == 4, "a new Rotation needs its MEMHAL_ROTATION_ constant");

static_assert(MEMHAL_RESIZE_MODE_STRETCH == code(ResizeMode::Stretch));
static_assert(MEMHAL_RESIZE_MODE_LETTERBOX == code(ResizeMode::Letterbox));
static_assert(all<ResizeMode>().size() == 2, "a new ResizeMode needs its MEMHAL_RESIZE_MODE_ constant");

static_assert(MEMHAL_INTERPOLATION_BILINEAR == code(Interpolation::Bilinear));
static_assert(MEMHAL_INTERPOLATION_NEAREST == code(Interpolation::Nearest));
static_assert(MEMHAL_INTERPOLATION_AREA == code(Interpolation::Area));
static_assert(all<Interpolation>().size() == 3, "a new Interpolation needs its MEMHAL_INTERPOLATION_ constant");

static_assert(MEMHAL_COLOR_MATRIX_BT601 == code(ColorMatrix::Bt601));
static_assert(MEMHAL_COLOR_MATRIX_BT709 == code(ColorMatrix::Bt709));
static_assert(all<ColorMatrix>().size() == 2, "a new ColorMatrix needs its MEMHAL_COLOR_MATRIX_ constant");

static_assert(MEMHAL_COLOR_RANGE_LIMITED == code(ColorRange::Limited));
static_assert(MEMHAL_COLOR_RANGE_FULL == code(ColorRange::Full));
static_assert(all<ColorRange>().size() == 2, "a new ColorRange needs its MEMHAL_COLOR_RANGE_ constant");

static_assert(MEMHAL_IMAGE_BACKEND_CPU == code(ImageBackend::Cpu));
static_assert(MEMHAL_IMAGE_BACKEND_GL == code(ImageBackend::Gl));
static_assert(all<ImageBackend>().size() == 2, "a new ImageBackend needs its MEMHAL_IMAGE_BACKEND_ constant");

namespace {

// Calls `f` with a value of the C++ vocabulary `vocabulary` names (its type is what matters),
// or records the error for a vocabulary this build does not know.
template <class F>
int with_vocabulary(memhal_vocabulary_t vocabulary, F&& f) {
  switch (vocabulary) {
    case MEMHAL_VOCABULARY_MEMORY_KIND: return f(MemoryKind{});
    case MEMHAL_VOCABULARY_DTYPE: return f(DType{});
    case MEMHAL_VOCABULARY_PIXEL_FORMAT: return f(PixelFormat{});
    case MEMHAL_VOCABULARY_COMPRESSION: return f(Compression{});
    case MEMHAL_VOCABULARY_CPU_ACCESS: return f(CpuAccess{});
    case MEMHAL_VOCABULARY_MEMORY_DOMAIN_KIND: return f(MemoryDomainKind{});
    case MEMHAL_VOCABULARY_ERROR_CODE: return f(ErrorCode{});
    case MEMHAL_VOCABULARY_FLIP: return f(Flip{});
    case MEMHAL_VOCABULARY_ROTATION: return f(Rotation{});
    case MEMHAL_VOCABULARY_RESIZE_MODE: return f(ResizeMode{});
    case MEMHAL_VOCABULARY_INTERPOLATION: return f(Interpolation{});
    case MEMHAL_VOCABULARY_COLOR_MATRIX: return f(ColorMatrix{});
    case MEMHAL_VOCABULARY_COLOR_RANGE: return f(ColorRange{});
    case MEMHAL_VOCABULARY_IMAGE_BACKEND: return f(ImageBackend{});
    case MEMHAL_VOCABULARY_MAX_ENUM: break;
  }
  return fail(ErrorCode::InvalidArgument, "vocabulary " + std::to_string(static_cast<int>(vocabulary)) + " is unknown");
}

}  // namespace

extern "C" {

const char* memhal_version(void) {
  return memhal::version();
}

const char* memhal_last_error_message(void) {
  return memhal::c_api::last_error();
}

int memhal_code_to_string(memhal_vocabulary_t vocabulary, uint32_t value, const char** out) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr, "memhal_code_to_string: out is NULL");
    return with_vocabulary(vocabulary, [&]<class E>(E) {
      auto known = from_code<E>(value);
      if (!known) {
        return fail(ErrorCode::InvalidArgument, std::string(VocabularyTraits<E>::name) + " code " +
                                                    std::to_string(value) + " is unknown to this build");
      }
      *out = to_string(*known).data();  // the tables' string literals are NUL-terminated
      return MEMHAL_OK;
    });
  });
}

int memhal_string_to_code(memhal_vocabulary_t vocabulary, const char* text, uint32_t* out) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(text != nullptr && out != nullptr, "memhal_string_to_code: NULL argument");
    return with_vocabulary(vocabulary, [&]<class E>(E) {
      auto known = from_string<E>(text);
      if (!known) {
        return fail(ErrorCode::InvalidArgument,
                    std::string(VocabularyTraits<E>::name) + " '" + text + "' is unknown to this build");
      }
      *out = code(*known);
      return MEMHAL_OK;
    });
  });
}

int memhal_memory_kind_availability(int32_t memory_kind, int* available, const char** reason) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(available != nullptr && reason != nullptr, "memhal_memory_kind_availability: NULL output");
    auto kind = memory_kind >= 0 ? from_code<MemoryKind>(static_cast<uint32_t>(memory_kind)) : std::nullopt;
    if (!kind)
      return fail(ErrorCode::InvalidArgument, "memory kind code " + std::to_string(memory_kind) + " is unknown");
    // availability() is cached per kind for the process, so its reasons can be handed out once.
    static std::mutex mutex;
    static std::array<std::optional<std::string>, 6> reasons;
    const Availability answer = availability(*kind);
    std::lock_guard lock(mutex);
    auto& stored = reasons.at(code(*kind));
    if (!stored) stored = answer.reason;
    *available = answer.available ? 1 : 0;
    *reason = stored->c_str();
    return MEMHAL_OK;
  });
}

int memhal_dtype_size(uint32_t dtype, size_t* out) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr, "memhal_dtype_size: out is NULL");
    auto known = memhal::c_api::checked<DType>(dtype, "dtype");
    if (!known) return static_cast<int>(ErrorCode::InvalidArgument);
    *out = size_of(*known);
    return MEMHAL_OK;
  });
}

}  // extern "C"
