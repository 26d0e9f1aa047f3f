# frozen_string_literal: true

require "bigdecimal"
require_relative "customer"

CURRENCY = "USD"
TAX_RATES = { "US" => 0.07, "DE" => 0.19 }.freeze

module Billing
  class Invoice
    attr_reader :customer, :lines

    def initialize(customer)
      @customer = customer
      @lines = []
    end

    def add_line(description, amount)
      raise ArgumentError, "amount must be positive" unless amount.positive?

      @lines << { description: description, amount: BigDecimal(amount.to_s) }
      self
    end

    def total
      subtotal = @lines.sum { |line| line[:amount] }
      rate = TAX_RATES.fetch(customer.country, 0)
      (subtotal * (1 + rate)).round(2)
    end

    def self.for(customer, items)
      items.each_with_object(new(customer)) do |(desc, amount), invoice|
        invoice.add_line(desc, amount)
      end
    end
  end

  def self.format_amount(amount)
    format("%<amount>.2f %<currency>s", amount: amount, currency: CURRENCY)
  end
end

def send_invoice(invoice, mailer)
  mailer.deliver(to: invoice.customer.email, body: Billing.format_amount(invoice.total))
end

puts Billing.format_amount(12.5) if $PROGRAM_NAME == __FILE__
