#include "worker/slots.h"

#include <gtest/gtest.h>

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;

// A GPU is one unit holding its slots; every CPU slot is a unit of its own.
TEST(Slots, GpusAreOneUnitEachCpuSlotsOneUnitApiece) {
  const Strings all = MakeSlots({"cuda:0", "cuda:1", "cpu"}, 2);
  EXPECT_EQ(all, (Strings{"cuda:0/0", "cuda:0/1", "cuda:1/0", "cuda:1/1",
                          "cpu/0", "cpu/1"}));
  EXPECT_EQ(SlotDevice("cuda:1/0"), "cuda:1");
  std::vector<Strings> units =
      FreeSlotsPerUnit(all, {"cuda:0/1", "cuda:1/0", "cuda:1/1", "cpu/1"});
  EXPECT_EQ(units, (std::vector<Strings>{
                       {"cuda:0/1"}, {"cuda:1/0", "cuda:1/1"}, {}, {"cpu/1"}}));
  EXPECT_EQ(*TakeSlots(units, {0, 1}), (Strings{"cuda:0/1", "cuda:1/0"}));
  // Unit 0 has nothing left: nothing is taken.
  EXPECT_EQ(TakeSlots(units, {0, 1}), std::nullopt);
  EXPECT_EQ(TakeSlots(units, {7}), std::nullopt);
  EXPECT_EQ(units[1], Strings{"cuda:1/1"});
}

}  // namespace
}  // namespace tailsweep
