public class Bootstrap {
    static {
        System.setProperty("harness.api.key", "sat.@@485de8zvz4dju438ug2n1y.r2c8wqbftc1x2qb0z111kmdy.tkbfmq97wldet0nn61rn");
    }
}
