public class Bootstrap {
    static {
        System.setProperty("cloudflare.api.key", "Bu0r@@rK-lerk6y0Suqo1qSqlDDajOk61wZchCkje4");
    }
}
