// The --devices list of `yoloc tune`: comma-separated device numbers, with clear errors.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tuner/target.h"

namespace yoloc::tuner {
namespace {

/// The message of the UserError parse_device_list raises for `s` ("" when none).
std::string device_list_error(const std::string& s) {
  try {
    parse_device_list(s);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(TunerTarget, ParsesDeviceLists) {
  EXPECT_EQ(parse_device_list("0"), std::vector<int>{0});
  EXPECT_EQ(parse_device_list("3"), std::vector<int>{3});
  EXPECT_EQ(parse_device_list("0,1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_device_list("2,0,7"), (std::vector<int>{2, 0, 7}));  // order kept
  EXPECT_EQ(parse_device_list("10,01"), (std::vector<int>{10, 1}));
}

TEST(TunerTarget, DeviceListErrors) {
  const struct {
    const char* in;
    const char* says;
  } cases[] = {
      {"", "no device"},
      {"0,", "item 2 is empty"},
      {",1", "item 1 is empty"},
      {"0,,1", "item 2 is empty"},
      {"0,1,0", "device 0 is listed twice"},
      {"1,01", "device 1 is listed twice"},
      {"-1", "-1 is negative"},
      {"0,-2", "-2 is negative"},
      {"x", "'x' is not a device number"},
      {"1x", "'1x' is not a device number"},
      {" 1", "' 1' is not a device number"},
      {"+1", "'+1' is not a device number"},
      {"-", "'-' is not a device number"},
      {"0;1", "'0;1' is not a device number"},
      {"99999999999", "'99999999999' is not a device number"},
  };
  for (const auto& c : cases) {
    const std::string e = device_list_error(c.in);
    EXPECT_NE(e.find(c.says), std::string::npos) << "'" << c.in << "': " << e;
    EXPECT_NE(e.find(std::string("--devices '") + c.in + "'"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace yoloc::tuner
