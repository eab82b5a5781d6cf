#ifndef TAILSWEEP_TESTS_TESTING_TINY_JOB_H_
#define TAILSWEEP_TESTS_TESTING_TINY_JOB_H_

// The training job the core tests run: 128-point clouds, a 2-layer model of
// width 32, 200 steps logged every step, a checkpoint every 100, a small
// evaluation. Tests change what they exercise.

#include "core/job_config.h"

namespace tailsweep::testing {

inline JobConfig TinyJob() {
  JobConfig c;
  c.n_points = 128;
  c.d_model = 32;
  c.heads = 4;
  c.layers = 2;
  c.steps = 200;
  c.batch = 4;
  c.lr = 3e-3;
  c.warmup = 20;
  c.log_every = 1;
  c.checkpoint_every = 100;
  c.eval_instances = 4;
  c.reference_trials = 4;
  return c;
}

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_TINY_JOB_H_
