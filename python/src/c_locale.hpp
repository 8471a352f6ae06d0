// dnmf Python bindings: the "C" locale for the library's calls.
#pragma once

#include <locale.h>

namespace dnmf::python {

/// Puts the calling thread in the "C" locale while it lives. Python's locale.setlocale(LC_ALL, 'de_DE.UTF-8')
/// sets the process's C locale, and the library's printf-style figures (progress lines, nmfk.json's message,
/// sizes in messages) came out with decimal commas where the CLI, which never sets a locale, prints points.
class CLocaleScope {
 public:
  CLocaleScope() : c_(::newlocale(LC_ALL_MASK, "C", nullptr)), previous_(c_ != nullptr ? ::uselocale(c_) : nullptr) {}
  ~CLocaleScope() {
    if (c_ == nullptr) return;
    ::uselocale(previous_);
    ::freelocale(c_);
  }
  CLocaleScope(const CLocaleScope&) = delete;
  CLocaleScope& operator=(const CLocaleScope&) = delete;

 private:
  locale_t c_;
  locale_t previous_;
};

}  // namespace dnmf::python
