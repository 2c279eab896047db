#pragma once
// A failed API call: the HTTP status and the OpenAI error object sent back
// ({"error": {"message", "type", "param", "code"}}).

#include <stdexcept>
#include <string>

#include "http_exchange.h"

namespace dq4::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = "", std::string code = "",
           std::string type = "");

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // The JSON body: {"error": {...}}; an empty param or code is null.
  std::string body() const;
  // The HTTP response: status, JSON body, and Retry-After when set.
  HttpResponse response() const;
  ApiError& retry_after(int seconds) {
    retry_after_ = seconds;
    return *this;
  }

 private:
  int status_;
  std::string param_, code_, type_;
  int retry_after_ = 0;
};

// 400 invalid_request_error naming the request field at fault.
ApiError bad_request(const std::string& param, const std::string& message);

}  // namespace dq4::server
