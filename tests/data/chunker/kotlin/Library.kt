package com.example.library

import java.time.LocalDate

const val LOAN_DAYS = 21
val DEFAULT_GENRES = listOf("fiction", "science", "history")

data class Book(val isbn: String, val title: String, val genre: String)

class Library(private val name: String) {
    private val books = mutableMapOf<String, Book>()
    private val loans = mutableMapOf<String, LocalDate>()

    fun add(book: Book) {
        require(book.genre in DEFAULT_GENRES) { "unknown genre ${book.genre}" }
        books[book.isbn] = book
    }

    fun lend(isbn: String, today: LocalDate = LocalDate.now()): LocalDate {
        val book = books[isbn] ?: throw NoSuchElementException(isbn)
        check(isbn !in loans) { "${book.title} is already lent" }
        val due = today.plusDays(LOAN_DAYS.toLong())
        loans[isbn] = due
        return due
    }

    fun overdue(today: LocalDate): List<Book> =
        loans.filterValues { it.isBefore(today) }.keys.mapNotNull { books[it] }

    companion object {
        fun empty() = Library("empty")
    }
}

object Catalog {
    fun search(library: List<Book>, query: String): List<Book> =
        library.filter { it.title.contains(query, ignoreCase = true) }
}

fun formatBook(book: Book): String {
    return "${book.title} (${book.isbn})"
}

fun main() {
    val lib = Library("city")
    lib.add(Book("123", "Dune", "fiction"))
    println(lib.lend("123"))
}
