use std::collections::VecDeque;
use std::fmt;

pub const DEFAULT_CAPACITY: usize = 32;
static GREETING: &str = "job queue";

#[derive(Debug, Clone, PartialEq)]
pub enum Priority {
    Low,
    High,
}

#[derive(Debug)]
pub struct Job {
    pub id: u64,
    pub priority: Priority,
}

pub struct JobQueue {
    jobs: VecDeque<Job>,
    capacity: usize,
}

impl JobQueue {
    pub fn new(capacity: usize) -> Self {
        Self { jobs: VecDeque::with_capacity(capacity), capacity }
    }

    pub fn push(&mut self, job: Job) -> Result<(), Job> {
        if self.jobs.len() >= self.capacity {
            return Err(job);
        }
        match job.priority {
            Priority::High => self.jobs.push_front(job),
            Priority::Low => self.jobs.push_back(job),
        }
        Ok(())
    }

    pub fn pop(&mut self) -> Option<Job> {
        self.jobs.pop_front()
    }
}

impl fmt::Display for JobQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} jobs)", GREETING, self.jobs.len())
    }
}

pub trait Drain {
    fn drain_all(&mut self) -> Vec<Job>;
}

pub fn high_priority(queue: &JobQueue) -> usize {
    queue.jobs.iter().filter(|j| j.priority == Priority::High).count()
}

mod tests {
    use super::*;

    #[test]
    fn push_respects_capacity() {
        let mut q = JobQueue::new(1);
        assert!(q.push(Job { id: 1, priority: Priority::Low }).is_ok());
        assert!(q.push(Job { id: 2, priority: Priority::Low }).is_err());
    }
}
