// A campaign's state, and the one place its names are spelled: the
// campaigns table (its CHECK constraint, migrations/001), pacerctl, top, the
// console and /api/v1 all use these.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace pacer {

enum class CampaignState { kActive, kPaused, kCancelled, kCompleted };

inline constexpr std::array<std::pair<CampaignState, std::string_view>, 4> kCampaignStates{{
    {CampaignState::kActive, "active"},
    {CampaignState::kPaused, "paused"},
    {CampaignState::kCancelled, "cancelled"},
    {CampaignState::kCompleted, "completed"},
}};

// "active", "paused", "cancelled", "completed".
constexpr std::string_view campaignStateName(CampaignState s) noexcept {
  for (const auto& [state, name] : kCampaignStates)
    if (state == s) return name;
  return "unknown";
}

// The state a name spells; nullopt for any other text.
constexpr std::optional<CampaignState> parseCampaignState(std::string_view name) noexcept {
  for (const auto& [state, n] : kCampaignStates)
    if (n == name) return state;
  return std::nullopt;
}

// Active and paused campaigns still have messages to send.
constexpr bool isLive(CampaignState s) noexcept { return s == CampaignState::kActive || s == CampaignState::kPaused; }

}  // namespace pacer
