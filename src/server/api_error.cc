#include "api_error.h"

#include <nlohmann/json.hpp>

namespace dq4::server {
namespace {

// OpenAI's types: client errors are invalid_request_error, ours are server_error.
std::string default_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

}  // namespace

ApiError::ApiError(int status, const std::string& message, std::string param, std::string code,
                   std::string type)
    : std::runtime_error(message),
      status_(status),
      param_(std::move(param)),
      code_(std::move(code)),
      type_(type.empty() ? default_type(status) : std::move(type)) {}

std::string ApiError::body() const {
  nlohmann::json error = {
      {"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) error["param"] = param_;
  if (!code_.empty()) error["code"] = code_;
  return nlohmann::json{{"error", std::move(error)}}.dump(-1, ' ', false,
                                                          nlohmann::json::error_handler_t::replace);
}

HttpResponse ApiError::response() const {
  HttpResponse r{status_, "application/json", body(), {}};
  if (retry_after_ > 0) r.headers.emplace_back("Retry-After", std::to_string(retry_after_));
  return r;
}

ApiError bad_request(const std::string& param, const std::string& message) {
  return ApiError(400, message, param);
}

}  // namespace dq4::server
