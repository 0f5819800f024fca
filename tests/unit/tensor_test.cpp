#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "yoloc/half.h"
#include "core/npy.h"
#include "yoloc/tensor.h"
#include "test_util.h"

using namespace yoloc;

TEST(Half, RoundTripsExactValues) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f})
    EXPECT_EQ(static_cast<float>(Half(f)), f);
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 lies exactly between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(static_cast<float>(Half(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(static_cast<float>(Half(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.0f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
}

TEST(Tensor, CastSaturatesAndConverts) {
  Tensor t = Tensor::from_vector<float>({3}, {1.7f, -1e20f, NAN});
  Tensor i = t.cast(DType::kInt32);
  EXPECT_EQ(i.data<int32_t>()[0], 1);
  EXPECT_EQ(i.data<int32_t>()[1], INT32_MIN);
  EXPECT_EQ(i.data<int32_t>()[2], 0);
}

TEST(Npy, RoundTrip) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto p = std::filesystem::temp_directory_path() / "yoloc_npy_test.npy";
  write_npy(p.string(), t);
  Tensor r = read_npy(p.string());
  ASSERT_EQ(r.shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r.data<float>()[i], t.data<float>()[i]);
  EXPECT_THROW(read_npy("/nonexistent.npy"), UserError);
}

// A header declaring more data than the file holds is refused before anything is allocated
// (found by fuzzing: a 176-byte file asked for 51 GB), as is a dim past 64 bits.
TEST(Npy, ShapeLargerThanTheFileIsRefusedBeforeAllocating) {
  const auto write = [](const std::string& name, const std::string& shape) {
    const auto p = std::filesystem::temp_directory_path() / name;
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::ofstream f(p, std::ios::binary);
    f << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(header.size() & 0xFF)
      << static_cast<char>(header.size() >> 8) << header << std::string(16, '\0');
    return p.string();
  };
  EXPECT_EQ(read_npy(write("yoloc_npy_ok.npy", "2, 2")).numel(), 4);
  const std::string huge = yoloc::testing::error_of([&] { read_npy(write("yoloc_npy_huge.npy", "100000, 100000")); });
  EXPECT_NE(huge.find("truncated"), std::string::npos) << huge;
  const std::string digits = yoloc::testing::error_of(
      [&] { read_npy(write("yoloc_npy_digits.npy", "99999999999999999999999, 1")); });
  EXPECT_NE(digits.find("truncated"), std::string::npos) << digits;
}
