<?php

namespace App\Repository;

use PDO;
use App\Model\User;

const PAGE_SIZE = 20;

interface Repository
{
    public function find(int $id): ?User;
}

class UserRepository implements Repository
{
    private PDO $db;

    public function __construct(PDO $db)
    {
        $this->db = $db;
    }

    public function find(int $id): ?User
    {
        $stmt = $this->db->prepare('SELECT * FROM users WHERE id = ?');
        $stmt->execute([$id]);
        $row = $stmt->fetch(PDO::FETCH_ASSOC);
        return $row ? User::fromArray($row) : null;
    }

    public function page(int $page): array
    {
        $offset = max(0, $page - 1) * PAGE_SIZE;
        $stmt = $this->db->query("SELECT * FROM users LIMIT " . PAGE_SIZE . " OFFSET $offset");
        return array_map([User::class, 'fromArray'], $stmt->fetchAll());
    }

    public static function create(string $dsn): self
    {
        return new self(new PDO($dsn));
    }
}

trait Timestamps
{
    public function touch(): void
    {
        $this->updatedAt = time();
    }
}

function normalize_email(string $email): string
{
    return strtolower(trim($email));
}

function is_valid_email(string $email): bool
{
    return filter_var(normalize_email($email), FILTER_VALIDATE_EMAIL) !== false;
}

$defaultRepository = null;
