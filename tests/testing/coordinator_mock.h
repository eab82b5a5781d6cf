#ifndef TAILSWEEP_TESTS_TESTING_COORDINATOR_MOCK_H_
#define TAILSWEEP_TESTS_TESTING_COORDINATOR_MOCK_H_

// The generated gmock of the coordinator's stub. protoc writes
// tailsweep_mock.grpc.pb.h without an include guard, so two files of one
// unity batch that included it directly would define the mock twice:
// include it through this header.

#include "proto/tailsweep_mock.grpc.pb.h"

#endif  // TAILSWEEP_TESTS_TESTING_COORDINATOR_MOCK_H_
