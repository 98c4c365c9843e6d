// The optimizer axis (`optimizer.type`, short name `opt`): how an optimizer's
// update crosses the network, plain (Adam, AdamW, Lamb: the gradients
// all-reduced or reduce-scattered by ZeRO) or 1-bit compressed (OneBitAdam,
// ZeroOneAdam, OneBitLamb: the momentum exchanged as signs and scales after a
// warm-up, engine/comm/compressed_all_reduce.h). Its values are one family's
// types, so that a sweep varies the communication and not the algorithm.
//
// Switching a candidate's type translates optimizer.params: a parameter the new
// type accepts is kept, one that belongs only to other types is dropped (the
// engine refuses it as foreign: freeze_step for AdamW, adam_w_mode for
// OneBitAdam), unknown keys stay (the engine reports them as ignored). A 1-bit
// candidate gets its freeze step (freeze_step; var_freeze_step for
// ZeroOneAdam): the base config's (either spelling), else kDefaultFreezeStep.
//
// A trial runs a few steps, so it would time only the warm-up: its config file
// (measured_config) moves the freeze inside the steps before the measured
// window, so that the window times the compressed phase. The candidate's own
// config (the run store's and the written best config) keeps the user's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hybrid::autotune {

// DeepSpeed's default freeze_step (and var_freeze_step), also the engine's.
constexpr int64_t kDefaultFreezeStep = 100000;

// Every type the axis accepts, and the family ("Adam", "Lamb") of one of them
// ("" when it is not one).
const std::vector<std::string>& optimizer_axis_types();
std::string optimizer_family(const std::string& type);
bool is_onebit_type(const std::string& type);

// Throws TuneError when the values mix families ("space: optimizer.type: AdamW
// and OneBitLamb are different algorithms ...").
void check_optimizer_axis(const std::vector<nlohmann::json>& values);

// Sets cfg's optimizer.type to `type`, its params translated as above.
void switch_optimizer(nlohmann::json& cfg, const std::string& type);

// The config a trial runs: `config` itself unless its optimizer is a 1-bit one
// whose freeze comes later than the step before start_profile_step; then with
// the freeze moved there, so that steps start_profile_step.. compress (from
// step 3 at the earliest: the 1-bit optimizers' step 1 updates nothing and
// step 2 is never compressed).
nlohmann::json measured_config(const nlohmann::json& config, int start_profile_step);

// What a sweep with 1-bit candidates logs: where their trials compress, and
// that the best config keeps the user's freeze step; a warning when `steps`
// ends before the first compressed step.
std::string onebit_trial_note(int start_profile_step, int steps);

}  // namespace hybrid::autotune
