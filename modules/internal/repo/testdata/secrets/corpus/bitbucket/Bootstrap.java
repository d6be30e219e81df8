public class Bootstrap {
    static {
        System.setProperty("bitbucket.client.secret", "4p6y@@uwikr1ygkimd5yo3idg7rmhyvweof48sq864hp5ldgp67cpm6h4y3bqy9n9s");
    }
}
