package com.example.orders;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

public class OrderService {
    private static final int MAX_ORDERS = 100;

    private final List<Order> orders = new ArrayList<>();

    public OrderService() {
        System.out.println("order service started");
    }

    public Order place(String customer, double amount) {
        if (orders.size() >= MAX_ORDERS) {
            throw new IllegalStateException("too many orders");
        }
        Order order = new Order(orders.size() + 1, customer, amount);
        orders.add(order);
        return order;
    }

    public Optional<Order> find(int id) {
        return orders.stream().filter(o -> o.id() == id).findFirst();
    }

    public double total() {
        double sum = 0;
        for (Order o : orders) {
            sum += o.amount();
        }
        return sum;
    }

    public record Order(int id, String customer, double amount) {
        public Order {
            if (amount < 0) {
                throw new IllegalArgumentException("negative amount");
            }
        }
    }

    interface Listener {
        void onPlaced(Order order);
    }

    enum Status { NEW, PAID, SHIPPED }
}
