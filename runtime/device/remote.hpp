// A device of another rank of an SPMD job (runtime/device/cluster.hpp), named "rank<R>/KIND:i". Every
// rank plans the whole job's schedule, so this rank binds memory and submits work for other ranks'
// devices too: a RemoteDevice takes them and does nothing (its owner does the work). Its memory is
// never touched here: allocate hands out null; copying values in or out is a DeviceError.
#pragma once

#include <string>

#include "runtime/device/device.hpp"

namespace ringrt {

class RemoteDevice final : public Device {
 public:
  RemoteDevice(std::string name, int rank) : name_(std::move(name)), rank_(rank) {}
  const std::string& name() const override { return name_; }
  int remote_rank() const override { return rank_; }

  void* allocate(size_t) override { return nullptr; }
  void free(void*, size_t) override {}
  void copy_in(void*, const void*, size_t) override;                                // throws DeviceError
  void copy_out(void*, const void*, size_t) override;                               // throws DeviceError
  std::shared_ptr<CompiledKernel> compile(const codegen::Kernel& kernel) override;  // throws InternalError
  // The owner runs these: done at once here.
  Event launch(const CompiledKernel&, std::vector<void*>, int32_t, std::vector<Event>) override { return done(); }
  Event copy_from(Device&, const void*, void*, size_t, std::vector<Event>) override { return done(); }
  Event submit(std::function<void()>, std::vector<Event>) override { return done(); }
  void synchronize() override {}

 private:
  static Event done() {
    Event e;
    e.set_done();
    return e;
  }
  std::string name_;
  int rank_;
};

}  // namespace ringrt
