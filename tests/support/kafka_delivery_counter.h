// Counts a test producer's delivery reports: how many records the broker
// acknowledged and how many it did not.
#pragma once

#include <librdkafka/rdkafkacpp.h>

namespace pacer::testing {

class DeliveryCounter : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& m) override { (m.err() == RdKafka::ERR_NO_ERROR ? delivered : failed)++; }
  int delivered = 0;
  int failed = 0;
};

}  // namespace pacer::testing
