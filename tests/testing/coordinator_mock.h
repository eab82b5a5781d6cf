#ifndef TAILSWEEP_TESTS_TESTING_COORDINATOR_MOCK_H_
#define TAILSWEEP_TESTS_TESTING_COORDINATOR_MOCK_H_

// The generated gmock of the coordinator's stub, behind an include guard.
// Test files include this header, never tailsweep_mock.grpc.pb.h itself:
// protoc gives that file no guard, and two files of one unity batch that
// both included it would define the mock twice.

#include "proto/tailsweep_mock.grpc.pb.h"

#endif  // TAILSWEEP_TESTS_TESTING_COORDINATOR_MOCK_H_
