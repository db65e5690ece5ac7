// Aligned text tables for pacerctl's human output. Pure.
#pragma once

#include <string>
#include <vector>

namespace pacer::control {

class Table {
 public:
  // `right` marks the columns aligned to the right (numbers).
  explicit Table(std::vector<std::string> headers, std::vector<bool> right = {});

  void add(std::vector<std::string> row);  // as many cells as headers
  // Header line, then one line per row; columns two spaces apart, widths in
  // UTF-8 characters, no trailing spaces.
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text: one per character (ids and names are
// validated UTF-8; wide East Asian characters are counted as one).
std::size_t textWidth(const std::string& s);

}  // namespace pacer::control
