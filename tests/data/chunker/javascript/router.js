'use strict';

const http = require('http');
const { parse } = require('url');

const DEFAULT_PORT = 8080;
const METHODS = ['GET', 'POST', 'PUT', 'DELETE'];

class Router {
  constructor() {
    this.routes = new Map();
    this.middleware = [];
  }

  use(fn) {
    this.middleware.push(fn);
    return this;
  }

  route(method, path, handler) {
    if (!METHODS.includes(method)) {
      throw new Error(`unsupported method ${method}`);
    }
    this.routes.set(`${method} ${path}`, handler);
    return this;
  }

  handle(req, res) {
    const { pathname } = parse(req.url);
    const handler = this.routes.get(`${req.method} ${pathname}`);
    for (const fn of this.middleware) {
      fn(req, res);
    }
    if (!handler) {
      res.statusCode = 404;
      return res.end('not found');
    }
    return handler(req, res);
  }
}

function notFound(res) {
  res.statusCode = 404;
  res.end('not found');
}

const logger = function (req) {
  console.log(`${new Date().toISOString()} ${req.method} ${req.url}`);
};

function listen(router, port = DEFAULT_PORT) {
  const server = http.createServer((req, res) => router.handle(req, res));
  server.listen(port);
  return server;
}

module.exports = { Router, listen, logger, notFound };
