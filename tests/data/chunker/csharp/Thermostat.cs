using System;
using System.Collections.Generic;

namespace Home.Climate
{
    public enum Mode { Off, Heat, Cool }

    public interface ISensor
    {
        double Read();
    }

    public class Thermostat
    {
        private const double MinTarget = 10.0;
        private readonly ISensor _sensor;
        private readonly List<double> _history = new List<double>();

        public Thermostat(ISensor sensor)
        {
            _sensor = sensor ?? throw new ArgumentNullException(nameof(sensor));
        }

        public double Target { get; private set; } = 20.0;

        public void SetTarget(double value)
        {
            if (value < MinTarget)
            {
                throw new ArgumentOutOfRangeException(nameof(value));
            }
            Target = value;
        }

        public Mode Decide()
        {
            var current = _sensor.Read();
            _history.Add(current);
            if (Math.Abs(current - Target) < 0.5) return Mode.Off;
            return current < Target ? Mode.Heat : Mode.Cool;
        }
    }

    public static class Units
    {
        public static double ToFahrenheit(double celsius) => celsius * 9 / 5 + 32;

        public static double ToCelsius(double fahrenheit)
        {
            return (fahrenheit - 32) * 5 / 9;
        }
    }

    public struct Reading
    {
        public double Value;
        public DateTime At;
    }
}
