// Runs an action that must throw dnmf::Error and returns its message (a test failure if it does not throw).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "dnmf/error.hpp"

namespace dnmf::test {

template <class F>
std::string error_message(F&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected dnmf::Error";
  return {};
}

}  // namespace dnmf::test
