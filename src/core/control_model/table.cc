#include "pacer/control/table.h"

#include <algorithm>
#include <stdexcept>

namespace pacer::control {

std::size_t textWidth(const std::string& s) {
  // Count every byte that does not continue a multi-byte character.
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

Table::Table(std::vector<std::string> headers, std::vector<bool> right)
    : headers_(std::move(headers)), right_(std::move(right)) {
  right_.resize(headers_.size(), false);
}

void Table::add(std::vector<std::string> row) {
  if (row.size() != headers_.size()) throw std::logic_error("Table::add: cell count differs from the headers");
  rows_.push_back(std::move(row));
}

std::string Table::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = textWidth(headers_[c]);
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], textWidth(row[c]));
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = width[c] - textWidth(cells[c]);
      if (c > 0) text += "  ";
      if (right_[c]) text.append(pad, ' ');
      text += cells[c];
      if (!right_[c]) text.append(pad, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text;
    out += '\n';
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
  return out;
}

}  // namespace pacer::control
